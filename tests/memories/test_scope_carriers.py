"""One table of the carriers each scope needs (memories.models.SCOPE_CARRIERS): the database
constraint, the services, the API and the vector partition keys all follow it."""

import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.loader import MigrationLoader

from memories import services
from memories.accounts.tenants import default_tenant
from memories.carriers import owned_carriers, ownership_errors, scope_in_context
from memories.errors import InvalidInput
from memories.fact_keys import fact_group
from memories.models import (
    SCOPE_CARRIERS,
    CarrierIds,
    Memory,
    MemoryEmbedding,
    Persona,
    Project,
    Scope,
    Topic,
    scope_carriers_condition,
)
from memories.recall.vector_store import partition_key, partition_of
from tests.conftest import make_user
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
        "persona": Persona.objects.create(tenant=default_tenant(), name="Tutor"),
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


def test_a_memory_names_its_carriers_in_one_tuple_that_recall_and_fact_keys_share(world):
    for memory in world["memories"].values():
        carriers = memory.carrier_ids()
        assert carriers == (
            memory.scope,
            memory.user_id,
            memory.persona_id,
            memory.project_id,
            memory.topic_id,
        )
        assert carriers.partition == partition_of(memory)
        sitting_there = list(Memory.objects.filter(carriers.condition))
        assert memory in sitting_there
        assert {other.carrier_ids() for other in sitting_there} == {carriers}
        assert fact_group(memory).carriers == carriers


def test_carrier_ids_of_carrier_objects_leave_the_absent_ones_empty(world):
    memory = next(m for m in world["memories"].values() if m.scope == Scope.PROJECT)
    carriers = CarrierIds.of(Scope.PROJECT, user=memory.user, project=memory.project)
    assert carriers == memory.carrier_ids()
    assert carriers.persona_id is None and carriers.topic_id is None


@pytest.mark.parametrize(
    ("named", "present", "lands"),
    [
        (Scope.SESSION, {"user", "topic", "project"}, Scope.SESSION),
        (Scope.SESSION, {"user", "project"}, Scope.PROJECT),  # a work session has no topic
        (Scope.SESSION, {"user"}, Scope.USER),
        (Scope.PROJECT, {"user", "topic"}, Scope.USER),
        (Scope.PERSONA_USER, {"user", "persona"}, Scope.PERSONA_USER),
        (Scope.PERSONA_USER, {"user"}, Scope.USER),
        (Scope.PERSONA, {"user", "persona"}, Scope.USER),  # never shared with every user
        (Scope.USER, {"user", "persona", "project", "topic"}, Scope.USER),
    ],
)
def test_a_fact_said_in_a_context_lands_in_the_nearest_scope_the_context_carries(
    named, present, lands
):
    assert scope_in_context(named, present=present) == lands


def test_another_users_project_or_topic_is_answered_as_an_unknown_one(world):
    memory = next(m for m in world["memories"].values() if m.scope == Scope.PROJECT)
    owner, project = memory.user, memory.project
    topic = Topic.objects.create(user=owner, title="t")
    stranger = make_user("stranger-of-carriers")
    assert ownership_errors(owner, project=project, topic=topic) == {}
    assert ownership_errors(stranger, project=project, topic=topic) == {
        "project_id": "No such project.",
        "topic_id": "No such topic.",
    }
    assert project in set(owned_carriers("project", owner))
    assert topic in set(owned_carriers("topic", owner))
    assert not owned_carriers("project", stranger).exists()
    assert not owned_carriers("topic", stranger).exists()
