"""One table of the carriers each scope needs (memories.models.SCOPE_CARRIERS): the database
constraint, the services, the API and the vector partition keys all follow it."""

import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.loader import MigrationLoader

from memories import services
from memories.errors import InvalidInput
from memories.models import (
    SCOPE_CARRIERS,
    Memory,
    MemoryEmbedding,
    Persona,
    Project,
    Scope,
    Topic,
    scope_carriers_condition,
)
from memories.recall.vector_store import partition_key, partition_of
from tests.memories.helpers import assert_error

USER = uuid.UUID("11111111-1111-1111-1111-111111111111")
PERSONA = uuid.UUID("22222222-2222-2222-2222-222222222222")
PROJECT = uuid.UUID("33333333-3333-3333-3333-333333333333")
TOPIC = uuid.UUID("44444444-4444-4444-4444-444444444444")
IDS = {"user_id": USER, "persona_id": PERSONA, "project_id": PROJECT, "topic_id": TOPIC}

# Stored vector rows are keyed by these strings: they must stay exactly so.
PARTITIONS = {
    "user": "user:11111111-1111-1111-1111-111111111111",
    "project": "project:11111111-1111-1111-1111-111111111111:33333333-3333-3333-3333-333333333333",
    "session": "session:11111111-1111-1111-1111-111111111111:44444444-4444-4444-4444-444444444444",
    "persona": "persona:22222222-2222-2222-2222-222222222222",
    "persona_user": (
        "persona_user:22222222-2222-2222-2222-222222222222:11111111-1111-1111-1111-111111111111"
    ),
}


def test_the_table_names_every_scope():
    assert set(SCOPE_CARRIERS) == set(Scope.values)


@pytest.mark.parametrize("scope", list(PARTITIONS))
def test_partition_keys_stay_as_the_stored_vector_rows_have_them(scope):
    assert partition_key(scope=scope, **IDS) == PARTITIONS[scope]
    assert partition_key(scope=Scope(scope), **IDS) == PARTITIONS[scope]


def test_a_partition_key_of_an_unknown_scope_is_an_error():
    with pytest.raises(ValueError, match="unknown scope"):
        partition_key(scope="global", user_id=USER)


def test_memories_in_every_scope_are_stored_under_their_partition(world):
    for label, memory in world["memories"].items():
        stored = MemoryEmbedding.objects.get(memory=memory).partition
        carrier_ids = {
            "user": memory.user_id,
            "persona": memory.persona_id,
            "project": memory.project_id,
            "topic": memory.topic_id,
        }
        expected = {
            "user": f"user:{memory.user_id}",
            "project": f"project:{memory.user_id}:{memory.project_id}",
            "session": f"session:{memory.user_id}:{memory.topic_id}",
            "persona": f"persona:{memory.persona_id}",
            "persona_user": f"persona_user:{memory.persona_id}:{memory.user_id}",
        }[memory.scope]
        assert stored == expected == partition_of(memory), label
        assert all(
            (carrier_ids[name] is not None) == (name in SCOPE_CARRIERS[memory.scope])
            for name in carrier_ids
        ), label


def test_the_constraint_is_the_one_the_migrations_created(db):
    state = MigrationLoader(connection).project_state()
    constraints = state.models["memories", "memory"].options["constraints"]
    [migrated] = [c for c in constraints if c.name == "memory_scope_carriers"]

    assert migrated.condition == scope_carriers_condition()


@pytest.fixture
def carriers(owner) -> dict:
    return {
        "user": owner,
        "persona": Persona.objects.create(name="Tutor"),
        "project": Project.objects.create(owner=owner, name="Backend"),
        "topic": Topic.objects.create(user=owner, title="Trip"),
    }


def wrong_mixes():
    """Every scope with one carrier too many or one too few."""
    for scope in SCOPE_CARRIERS:
        for name in ("user", "persona", "project", "topic"):
            yield scope, name


@pytest.mark.parametrize(("scope", "flipped"), list(wrong_mixes()))
def test_the_database_and_the_service_refuse_a_carrier_mix_the_table_does_not_allow(
    carriers, scope, flipped
):
    given = {name: carriers[name] for name in SCOPE_CARRIERS[scope]}
    if flipped in given:
        del given[flipped]
    else:
        given[flipped] = carriers[flipped]

    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.objects.create(scope=scope, key="k", value="v", **given)
    with pytest.raises(InvalidInput) as refused:
        services.memory_create(actor=None, scope=scope, key="k", value="v", **given)
    assert refused.value.field == f"{flipped}_id"
    assert not Memory.objects.exists()


@pytest.mark.parametrize("scope", list(SCOPE_CARRIERS))
def test_the_database_takes_each_scope_with_exactly_its_carriers(carriers, scope):
    given = {name: carriers[name] for name in SCOPE_CARRIERS[scope]}

    memory = services.memory_create(actor=None, scope=scope, key="k", value="v", **given)

    assert Memory.objects.get(id=memory.id).scope == scope


@pytest.mark.parametrize(
    ("scope", "sent", "field", "message"),
    [
        ("user", ["project"], "project_id", "use scope project"),
        ("project", [], "project_id", "Required for project scope"),
        ("project", ["project", "persona"], "persona_id", "use scope persona or persona_user"),
        ("persona_user", [], "persona_id", "Required for persona_user scope"),
    ],
)
def test_a_manual_create_names_the_carrier_its_scope_does_not_take(
    api, carriers, scope, sent, field, message
):
    body = {"scope": scope, "key": "k", "value": "v"}
    body.update({f"{name}_id": str(carriers[name].id) for name in sent})

    response = api.post("/api/memories", body, format="json")

    error = assert_error(response, 400, field)
    assert message in error["fields"][field][0]
    assert not Memory.objects.exists()
