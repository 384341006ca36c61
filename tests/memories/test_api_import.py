"""POST /api/memories/import: NDJSON in, idempotently."""

import io
import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories import services
from memories.accounts.tenants import default_tenant
from memories.embeddings.embedders import embed_one
from memories.models import Memory, MemoryEmbedding, MemoryRevision, Persona, Scope, Status
from memories.portability import import_lines, importing
from memories.recall.vector_store import get_vector_store, partition_of
from tests.conftest import client_for, key_client, make_user, new_key
from tests.memories.helpers import (
    NOTHING_STORED,
    assert_error,
    make_memory,
    make_pending,
    stored_rows,
)

URL = "/api/memories/import"
EXPORT_URL = "/api/memories/export"
NDJSON = "application/x-ndjson"
# What an export line says about whose memory it is; the rest must survive a move.
ACCOUNT_FIELDS = {"owner_id", "user_id", "external_user_id"}


def ndjson(lines) -> str:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


def post_import(client, lines, *, dry_run: bool = False, content_type: str = NDJSON):
    path = f"{URL}?dry_run=true" if dry_run else URL
    return client.post(path, ndjson(lines), content_type=content_type)


def import_ok(client, lines, **kwargs) -> dict:
    response = post_import(client, lines, **kwargs)
    assert response.status_code == 200, response.content[:1000]
    return response.json()


def export(client, **params) -> list[dict]:
    response = client.get(EXPORT_URL, params)
    assert response.status_code == 200
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def has_vector(memory: Memory) -> bool:
    hits = get_vector_store().nearest(
        vector=embed_one(memory.embedding_text),
        partitions=[partition_of(memory)],
        k=10,
        status=memory.status,
    )
    return any(hit.memory_id == memory.id and hit.distance < 1e-4 for hit in hits)


def result(created=0, updated=0, unchanged=0, superseded=0, errors=()) -> dict:
    return {
        "created": created,
        "updated": updated,
        "unchanged": unchanged,
        "superseded": superseded,
        "errors": list(errors),
    }


@pytest.fixture
def persona(db) -> Persona:
    return Persona.objects.create(tenant=default_tenant(), name="Tutor")


@pytest.fixture
def owned(owner, api, persona):
    """The owner's memories of every kind an owner may have, one of them deleted."""
    project = services.project_create(owner=owner, name="shop")
    topic = services.topic_create(user=owner, title="chat")
    memories = {
        "user": make_memory(owner, key="language", value="Go with Gin", category="tech"),
        "pending": make_pending(owner, key="city", value="Lives in Lisbon"),
        "archived": make_memory(owner, key="pet", value="Had a cat", status=Status.ARCHIVED),
        "project": make_memory(
            owner,
            key="db",
            value="Uses PostgreSQL",
            scope=Scope.PROJECT,
            project=project,
        ),
        "session": make_memory(
            owner,
            key="mood",
            value="Was tired today",
            scope=Scope.SESSION,
            topic=topic,
        ),
        "persona_user": make_memory(
            owner, key="level", value="Beginner in Rust", scope=Scope.PERSONA_USER, persona=persona
        ),
        "deleted": make_memory(owner, key="job", value="Was a nurse", importance=0.9),
    }
    assert api.delete(f"/api/memories/{memories['deleted'].id}").status_code == 204
    Memory.objects.filter(id=memories["user"].id).update(access_count=7)
    return memories


# --- creating -----------------------------------------------------------------------------------


def test_it_creates_memories_keeping_what_the_lines_say(api, owner):
    created_at = timezone.now() - timedelta(days=40)
    line = {
        "id": str(uuid.uuid4()),
        "scope": "user",
        "key": "language",
        "value": "Go with Gin",
        "category": "tech",
        "importance": 0.8,
        "confidence": 0.7,
        "status": "pending_review",
        "source": "conversation",
        "source_channel_id": str(uuid.uuid4()),
        "access_count": 12,
        "last_accessed_at": (created_at + timedelta(days=3)).isoformat(),
        "created_at": created_at.isoformat(),
        "updated_at": (created_at + timedelta(days=1)).isoformat(),
        "deleted_at": None,
    }

    assert import_ok(api, [line]) == result(created=1)

    memory = Memory.objects.get()
    assert str(memory.id) == line["id"]
    assert memory.user_id == owner.id
    for name in ("scope", "key", "value", "category", "importance", "confidence", "status"):
        assert getattr(memory, name) == line[name], name
    assert (memory.source, str(memory.source_channel_id)) == (
        "conversation",
        line["source_channel_id"],
    )
    assert memory.access_count == 12
    for name in ("created_at", "updated_at", "last_accessed_at"):
        assert getattr(memory, name) == parse_datetime(line[name]), name
    assert memory.deleted_at is None
    assert has_vector(memory)
    revision = MemoryRevision.objects.get(memory=memory)
    assert (revision.action, revision.actor_id, revision.before) == ("import", owner.id, None)


def test_a_line_needs_only_key_and_value(api, owner):
    assert import_ok(api, [{"key": "city", "value": "Lives in Porto"}]) == result(created=1)

    memory = Memory.objects.get()
    assert (memory.scope, memory.user_id, memory.status, memory.source) == (
        "user",
        owner.id,
        "active",
        "manual",
    )
    assert (memory.importance, memory.confidence, memory.category) == (0.5, 1.0, "")
    assert has_vector(memory)


def test_an_imported_memory_is_found_by_search(api):
    import_ok(api, [{"key": "pet", "value": "I have a golden retriever named Max"}])

    results = api.get("/api/memories/search", {"q": "What dog does the user own?"}).json()["data"]

    assert results[0]["value"] == "I have a golden retriever named Max"


def test_a_line_with_deleted_at_imports_a_soft_deleted_memory_without_vector(api):
    deleted_at = (timezone.now() - timedelta(days=1)).isoformat()

    assert import_ok(api, [{"key": "job", "value": "Was a nurse", "deleted_at": deleted_at}]) == (
        result(created=1)
    )

    memory = Memory.objects.get()
    assert memory.deleted_at == parse_datetime(deleted_at)
    assert not MemoryEmbedding.objects.exists()
    assert get_vector_store().count() == 0
    assert api.get("/api/memories").json()["count"] == 0
    assert MemoryRevision.objects.get(memory=memory).action == "import"


@pytest.mark.parametrize(("sent", "stored"), [(7, 1.0), (-3, 0.0)])
def test_importance_and_confidence_are_clamped(api, sent, stored):
    import_ok(api, [{"key": "k", "value": "v", "importance": sent, "confidence": sent}])

    memory = Memory.objects.get()
    assert (memory.importance, memory.confidence) == (stored, stored)


def test_global_scope_is_imported_as_user_scope(api, owner):
    import_ok(api, [{"scope": "global", "key": "k", "value": "v"}])

    assert Memory.objects.get().scope == "user"
    assert import_ok(api, [{"scope": "global", "key": "k", "value": "v"}]) == result(unchanged=1)


def test_blank_lines_are_skipped_and_still_counted(api):
    body = '\n{"key": "a", "value": "first"}\n\n  \n{"key": "b", "value": true}\n'

    response = api.post(URL, body, content_type=NDJSON)

    assert response.json() == result(
        created=1, errors=[{"line": 5, "field": "value", "detail": "Not a valid string."}]
    )


def test_a_last_line_without_newline_and_crlf_line_ends_are_read(api):
    body = '{"key": "a", "value": "first"}\r\n{"key": "b", "value": "second"}'

    response = api.post(URL, body, content_type=NDJSON)

    assert response.json() == result(created=2)
    assert sorted(Memory.objects.values_list("value", flat=True)) == ["first", "second"]


# --- idempotence and round trips ----------------------------------------------------------------


def test_an_export_imported_into_the_same_account_changes_nothing(api, owned):
    lines = export(api, include_deleted="true")
    before = stored_rows()

    assert import_ok(api, lines) == result(unchanged=len(owned))

    assert stored_rows() == before
    assert export(api, include_deleted="true") == lines


def test_importing_the_same_file_twice_changes_nothing_the_second_time(api, persona):
    lines = [
        {"id": str(uuid.uuid4()), "key": "language", "value": "Go with Gin"},
        {"key": "city", "value": "Lives in Lisbon", "status": "pending_review"},
        {"scope": "persona_user", "persona_id": str(persona.id), "key": "level", "value": "Rust"},
        {"key": "job", "value": "Was a nurse", "deleted_at": "2024-05-01T10:00:00Z"},
    ]

    assert import_ok(api, lines) == result(created=4)
    rows = stored_rows()
    assert rows == {"memories": 4, "revisions": 4, "embeddings": 3, "vectors": 3}
    first_export = export(api, include_deleted="true")

    assert import_ok(api, lines) == result(unchanged=4)

    assert stored_rows() == rows
    assert export(api, include_deleted="true") == first_export


def test_the_same_line_twice_in_one_file_creates_one_memory(api):
    line = {"key": "city", "value": "Lives in Lisbon"}

    assert import_ok(api, [line, line]) == result(created=1, unchanged=1)
    assert stored_rows()["memories"] == 1


def test_an_export_moves_to_another_account_with_its_ids(api, other_api, other, owned):
    lines = export(api, include_deleted="true")
    assert api.post("/api/me/erase", {"confirm": "owner"}, format="json").status_code == 204

    response = import_ok(other_api, lines)

    # The owner's project and topic went with the owner; the other user has neither.
    by_id = {line["id"]: number for number, line in enumerate(lines, start=1)}
    assert response == result(
        created=len(owned) - 2,
        errors=sorted(
            [
                {
                    "line": by_id[str(owned["project"].id)],
                    "field": "project_id",
                    "detail": "No project with this id.",
                },
                {
                    "line": by_id[str(owned["session"].id)],
                    "field": "topic_id",
                    "detail": "No topic with this id.",
                },
            ],
            key=lambda error: error["line"],
        ),
    )
    moved = [
        line
        for line in lines
        if line["id"] not in {str(owned["project"].id), str(owned["session"].id)}
    ]
    theirs = export(other_api, include_deleted="true")
    assert [without(line, ACCOUNT_FIELDS) for line in theirs] == [
        without(line, ACCOUNT_FIELDS) for line in moved
    ]
    assert {line["owner_id"] for line in theirs if line["scope"] == "user"} == {str(other.id)}
    assert import_ok(other_api, moved) == result(unchanged=len(moved))


def test_a_copy_without_ids_goes_to_another_account_once(api, other_api, owned):
    lines = [
        without(line, {"id"})
        for line in export(api, include_deleted="true")
        if line["scope"] in ("user", "persona_user")
    ]
    owners_rows = stored_rows()

    assert import_ok(other_api, lines) == result(created=len(lines))
    assert import_ok(other_api, lines) == result(unchanged=len(lines))

    theirs = export(other_api, include_deleted="true")
    ignored = {*ACCOUNT_FIELDS, "id"}
    assert [without(line, ignored) for line in theirs] == [without(line, ignored) for line in lines]
    assert stored_rows()["memories"] == owners_rows["memories"] + len(lines)


def test_ids_of_another_users_memories_answer_as_unknown_ids_and_change_nothing_of_theirs(
    api, other_api, other, owned
):
    """An import cannot tell whether an id exists in another account: such a line is
    imported as an unknown id would be (created, then unchanged when imported again), as a
    memory of the importer's own with a new id."""
    # (The owner's project and session lines would be refused for their carriers first.)
    lines = [line for line in export(api) if line["scope"] in ("user", "persona_user")]
    unknown = [{**line, "id": str(uuid.uuid4())} for line in lines]
    owners_export = export(api, include_deleted="true")

    first = import_ok(other_api, lines)
    again = import_ok(other_api, lines)

    assert first == import_ok(client_for(make_user("third")), unknown)
    assert first == result(created=len(lines))
    assert again == result(unchanged=len(lines))
    assert export(api, include_deleted="true") == owners_export
    theirs = {line["id"] for line in lines}
    copies = Memory.objects.filter(user=other)
    assert copies.count() == len(lines) and not {str(m.id) for m in copies} & theirs


# --- matching existing memories -----------------------------------------------------------------


def test_a_line_with_the_id_of_a_memory_updates_it(api, owner):
    memory = make_memory(owner, key="food", value="Loves pizza", category="taste")
    old_text = memory.embedding_text
    line = {**export(api)[0], "value": "Hates pizza", "importance": 0.9, "status": "archived"}

    assert import_ok(api, [line]) == result(updated=1)

    memory.refresh_from_db()
    assert (memory.value, memory.importance, memory.status) == ("Hates pizza", 0.9, "archived")
    assert has_vector(memory)
    neighbours = get_vector_store().distances(vector=embed_one(old_text), memory_ids=[memory.id])
    assert neighbours[0].distance > 0.05
    revision = MemoryRevision.objects.filter(memory=memory).latest("id")
    assert (revision.action, revision.actor_id) == ("import", owner.id)
    assert (revision.before["value"], revision.after["value"]) == ("Loves pizza", "Hates pizza")
    assert stored_rows() == {"memories": 1, "revisions": 2, "embeddings": 1, "vectors": 1}


def test_an_update_keeps_the_statistics_the_service_counted(api, owner):
    memory = make_memory(owner, key="food", value="Loves pizza")
    line = export(api)[0]
    Memory.objects.filter(id=memory.id).update(access_count=9)

    import_ok(api, [{**line, "category": "taste", "access_count": 0, "source": "tool"}])

    memory.refresh_from_db()
    assert (memory.category, memory.access_count, memory.source) == ("taste", 9, "manual")


def test_a_line_without_id_matches_by_scope_carriers_key_and_value(api, owner, persona):
    memory = make_memory(owner, key="city", value="Lives in Lisbon")
    personal = make_memory(
        owner, key="city", value="Lives in Lisbon", scope=Scope.PERSONA_USER, persona=persona
    )

    response = import_ok(
        api,
        [
            {"key": "city", "value": "Lives in Lisbon", "category": "home"},
            {
                "scope": "persona_user",
                "persona_id": str(persona.id),
                "key": "city",
                "value": "Lives in Lisbon",
            },
            {"key": "city", "value": "Lives in Porto"},
        ],
    )

    assert response == result(created=1, updated=1, unchanged=1)
    memory.refresh_from_db()
    personal.refresh_from_db()
    assert (memory.category, personal.category) == ("home", "")
    assert Memory.objects.filter(value="Lives in Porto", user=owner, scope="user").exists()


def test_a_live_line_for_a_deleted_memory_brings_it_back(api, owner):
    memory = make_memory(owner, key="job", value="Works as a nurse")
    line = export(api)[0]
    api.delete(f"/api/memories/{memory.id}")
    assert get_vector_store().count() == 0

    assert import_ok(api, [line]) == result(updated=1)

    memory.refresh_from_db()
    assert memory.deleted_at is None
    assert has_vector(memory)
    assert api.get(f"/api/memories/{memory.id}").status_code == 200


def test_a_deleted_line_for_a_live_memory_deletes_it(api, owner):
    memory = make_memory(owner, key="job", value="Works as a nurse")
    line = {**export(api)[0], "deleted_at": timezone.now().isoformat()}

    assert import_ok(api, [line]) == result(updated=1)

    memory.refresh_from_db()
    assert memory.deleted_at is not None
    assert get_vector_store().count() == 0
    assert not MemoryEmbedding.objects.exists()


def test_an_import_cannot_move_a_memory_to_another_scope(api, owned):
    line = next(line for line in export(api) if line["scope"] == "project")
    before = stored_rows()

    response = import_ok(api, [{**line, "scope": "user", "project_id": None}])

    assert [(e["line"], e["field"]) for e in response["errors"]] == [(1, "scope")]
    assert stored_rows() == before


def test_an_import_cannot_move_a_memory_to_another_project(api, owner, owned):
    other_project = services.project_create(owner=owner, name="other")
    line = next(line for line in export(api) if line["scope"] == "project")
    before = stored_rows()

    response = import_ok(api, [{**line, "project_id": str(other_project.id)}])

    assert [(e["line"], e["field"]) for e in response["errors"]] == [(1, "project_id")]
    assert stored_rows() == before


# --- dry run ------------------------------------------------------------------------------------


def test_a_dry_run_writes_nothing_and_answers_what_an_import_would(api, owner, monkeypatch):
    # Chunks of two lines, so that the dry run must remember what earlier chunks would write.
    monkeypatch.setattr(importing, "IMPORT_CHUNK_LINES", 2)
    kept = make_memory(owner, key="food", value="Loves pizza")
    changed = make_memory(owner, key="drink", value="Tea")
    new_id = str(uuid.uuid4())
    lines = [
        next(line for line in export(api) if line["id"] == str(kept.id)),
        {"id": str(changed.id), "key": "drink", "value": "Coffee"},
        {"id": new_id, "key": "city", "value": "Lives in Lisbon"},
        "{not json",
        {"key": "pet", "value": "Has a cat"},
        {"id": new_id, "key": "city", "value": "Lives in Lisbon"},
        {"key": "pet", "value": "Has a cat"},
        {"key": "k", "value": "v", "importance": "high"},
    ]
    before = stored_rows()
    exported = export(api, include_deleted="true")

    dry = import_ok(api, lines, dry_run=True)

    assert stored_rows() == before
    assert export(api, include_deleted="true") == exported
    assert dry["created"] == 2 and dry["updated"] == 1 and dry["unchanged"] == 3
    assert [(e["line"], e["field"]) for e in dry["errors"]] == [
        (4, "non_field_errors"),
        (8, "importance"),
    ]
    assert import_ok(api, lines) == dry


def test_dry_run_false_imports(api):
    response = api.post(
        f"{URL}?dry_run=false", ndjson([{"key": "k", "value": "v"}]), content_type=NDJSON
    )

    assert response.json() == result(created=1)


# --- bad lines ----------------------------------------------------------------------------------


BAD_LINES = [
    ("{broken", "non_field_errors"),
    ('{"key": "k", "value": "v",}', "non_field_errors"),
    ('{"key": "k", "value": "v", "importance": NaN}', "non_field_errors"),
    ("[1, 2]", "non_field_errors"),
    ('"just a string"', "non_field_errors"),
    ("null", "non_field_errors"),
    ('{"value": "v"}', "key"),
    ('{"key": "k"}', "value"),
    ('{"key": "", "value": "v"}', "key"),
    ('{"key": "   ", "value": "v"}', "key"),
    ('{"key": "' + "k" * 201 + '", "value": "v"}', "key"),
    ('{"key": "k", "value": "' + "v" * 4001 + '"}', "value"),
    ('{"key": "k", "value": "v", "category": "' + "c" * 101 + '"}', "category"),
    ('{"key": "k\\u0000", "value": "v"}', "key"),
    ('{"key": "k", "value": ["v"]}', "value"),
    ('{"key": "k", "value": "v", "importance": "high"}', "importance"),
    ('{"key": "k", "value": "v", "confidence": true}', "confidence"),
    ('{"key": "k", "value": "v", "improtance": 0.7}', "improtance"),
    ('{"key": "k", "value": "v", "scope": "everyone"}', "scope"),
    ('{"key": "k", "value": "v", "status": "deleted"}', "status"),
    ('{"key": "k", "value": "v", "source": "magic"}', "source"),
    ('{"key": "k", "value": "v", "id": "not-a-uuid"}', "id"),
    ('{"key": "k", "value": "v", "id": 42}', "id"),
    ('{"key": "k", "value": "v", "scope": "project"}', "project_id"),
    ('{"key": "k", "value": "v", "scope": "session"}', "topic_id"),
    ('{"key": "k", "value": "v", "scope": "persona_user"}', "persona_id"),
    ('{"key": "k", "value": "v", "project_id": "' + str(uuid.uuid4()) + '"}', "project_id"),
    ('{"key": "k", "value": "v", "access_count": -1}', "access_count"),
    ('{"key": "k", "value": "v", "access_count": "many"}', "access_count"),
    ('{"key": "k", "value": "v", "created_at": "yesterday"}', "created_at"),
    ('{"key": "k", "value": "v", "deleted_at": "2999-01-01T00:00:00Z"}', "deleted_at"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_LINES)
def test_a_bad_line_is_reported_by_number_and_field_and_the_good_lines_are_written(api, bad, field):
    lines = [{"key": "first", "value": "kept"}, bad, {"key": "third", "value": "kept too"}]

    response = import_ok(api, lines)

    assert response["created"] == 2
    assert len(response["errors"]) == 1, response["errors"]
    error = response["errors"][0]
    assert (error["line"], error["field"]) == (2, field)
    assert isinstance(error["detail"], str) and error["detail"]
    assert sorted(Memory.objects.values_list("key", flat=True)) == ["first", "third"]
    assert stored_rows() == {"memories": 2, "revisions": 2, "embeddings": 2, "vectors": 2}


def test_a_line_that_is_not_utf8_is_reported(api):
    body = b'{"key": "k", "value": "\xff\xfe"}\n{"key": "a", "value": "b"}\n'

    response = api.post(URL, body, content_type=NDJSON)

    assert response.json()["errors"] == [
        {"line": 1, "field": "non_field_errors", "detail": "The line is not UTF-8 text."}
    ]
    assert response.json()["created"] == 1


def test_a_line_longer_than_the_api_body_limit_is_reported(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    body = ndjson([{"key": "k", "value": "v" * 200}, {"key": "a", "value": "b"}])

    response = api.post(URL, body, content_type=NDJSON)

    assert response.status_code == 200
    assert [(e["line"], e["field"]) for e in response.json()["errors"]] == [(1, "non_field_errors")]
    assert response.json()["created"] == 1


def test_every_bad_field_of_a_line_is_named(api):
    response = import_ok(api, [{"key": "", "value": "v", "importance": "x", "status": "gone"}])

    assert sorted(e["field"] for e in response["errors"]) == ["importance", "key", "status"]
    assert {e["line"] for e in response["errors"]} == {1}
    assert stored_rows() == NOTHING_STORED


def test_errors_past_the_listed_maximum_are_counted_in_one_entry(api, monkeypatch):
    monkeypatch.setattr(import_lines, "MAX_LISTED_ERRORS", 2)

    response = import_ok(api, ["{bad"] * 5 + [{"key": "k", "value": "v"}])

    assert response["created"] == 1
    errors = response["errors"]
    assert [e["line"] for e in errors] == [1, 2, 3]
    assert errors[2]["detail"].startswith("3 more errors from this line on are not listed")


# --- carriers and access ------------------------------------------------------------------------


def test_another_users_project_and_topic_are_refused_naming_the_field(api, other_api):
    project = other_api.post("/api/projects", {"name": "theirs"}, format="json").json()["id"]
    topic = other_api.post("/api/topics", {"title": "theirs"}, format="json").json()["id"]

    response = import_ok(
        api,
        [
            {"scope": "project", "project_id": project, "key": "k", "value": "v"},
            {"scope": "session", "topic_id": topic, "key": "k", "value": "v"},
        ],
    )

    assert response == result(
        errors=[
            {"line": 1, "field": "project_id", "detail": "No project with this id."},
            {"line": 2, "field": "topic_id", "detail": "No topic with this id."},
        ]
    )
    assert stored_rows() == NOTHING_STORED


def test_own_project_and_session_memories_are_imported(api, owner):
    project = api.post("/api/projects", {"name": "shop"}, format="json").json()["id"]
    topic = api.post("/api/topics", {"title": "chat"}, format="json").json()["id"]

    response = import_ok(
        api,
        [
            {"scope": "project", "project_id": project, "key": "db", "value": "PostgreSQL"},
            {"scope": "session", "topic_id": topic, "key": "mood", "value": "Tired"},
        ],
    )

    assert response == result(created=2)
    assert {(m.scope, str(m.project_id or m.topic_id)) for m in Memory.objects.all()} == {
        ("project", project),
        ("session", topic),
    }


def test_an_unknown_persona_is_refused(api):
    line = {"scope": "persona_user", "persona_id": str(uuid.uuid4()), "key": "k", "value": "v"}

    assert import_ok(api, [line])["errors"] == [
        {"line": 1, "field": "persona_id", "detail": "No persona with this id."}
    ]


def test_persona_scope_needs_staff(api, staff_api, persona):
    line = {"scope": "persona", "persona_id": str(persona.id), "key": "tone", "value": "Brief"}

    assert import_ok(api, [line]) == result(
        errors=[
            {"line": 1, "field": "scope", "detail": "Only staff can write persona-scope memories."}
        ]
    )
    assert import_ok(staff_api, [line]) == result(created=1)
    memory = Memory.objects.get()
    assert (memory.scope, memory.persona_id, memory.user_id) == ("persona", persona.id, None)


def test_a_key_with_the_write_scope_imports_for_its_end_user(db):
    client = key_client(new_key("write"), "ext-alice")

    response = post_import(client, [{"key": "city", "value": "Porto"}])

    assert response.json() == result(created=1)
    assert Memory.objects.get().user.external_id == "ext-alice"


def test_a_key_without_the_write_scope_cannot_import(db):
    client = key_client(new_key("read"), "ext-alice")

    assert_error(post_import(client, [{"key": "city", "value": "Porto"}]), 403, "scope")
    assert stored_rows() == NOTHING_STORED


# --- the body -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type", ["application/json", "text/plain", "application/x-www-form-urlencoded"]
)
def test_another_content_type_answers_415_naming_the_body(api, content_type):
    response = api.post(URL, ndjson([{"key": "k", "value": "v"}]), content_type=content_type)

    body = assert_error(response, 415, "body")
    assert "application/x-ndjson" in body["detail"]
    assert stored_rows() == NOTHING_STORED


def test_a_charset_parameter_is_accepted(api):
    response = post_import(
        api, [{"key": "k", "value": "v"}], content_type=f"{NDJSON}; charset=utf-8"
    )

    assert response.json() == result(created=1)


def test_an_empty_body_imports_nothing(api):
    response = api.post(URL, "", content_type=NDJSON)

    assert response.json() == result()


def test_a_body_over_the_import_limit_answers_413(api, settings):
    settings.IMPORT_MAX_BYTES = 1000
    lines = [{"key": f"key {i}", "value": "some value"} for i in range(40)]

    response = post_import(api, lines)

    assert_error(response, 413, "body")
    assert stored_rows() == NOTHING_STORED


def test_a_body_over_the_api_limit_within_the_import_limit_is_imported(api, no_embedder):
    lines = [{"key": f"key {i}", "value": f"{i} " + "v" * 3990} for i in range(300)]
    assert len(ndjson(lines)) > 1024 * 1024

    assert import_ok(api, lines) == result(created=300)


def post_chunked(client, body: bytes):
    """A body sent with Transfer-Encoding: chunked, as gunicorn hands it over: no
    Content-Length, the de-chunked input marked as terminated."""
    return client.post(
        URL,
        content_type=NDJSON,
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True},
    )


def test_a_chunked_body_is_imported(api):
    response = post_chunked(
        api, ndjson([{"key": "a", "value": "b"}, {"key": "c", "value": "d"}]).encode()
    )

    assert response.status_code == 200, response.content
    assert response.json() == result(created=2)


def test_a_chunked_body_over_the_limit_answers_413_and_writes_nothing(api, settings):
    settings.IMPORT_MAX_BYTES = 1000
    lines = [{"key": f"key {i}", "value": "some value"} for i in range(40)]

    response = post_chunked(api, ndjson(lines).encode())

    assert_error(response, 413, "body")
    assert stored_rows() == NOTHING_STORED


def test_more_lines_than_a_chunk_are_all_imported(api, monkeypatch, no_embedder):
    monkeypatch.setattr(importing, "IMPORT_CHUNK_LINES", 3)
    lines = [{"key": f"key {i}", "value": f"value {i}"} for i in range(10)]

    assert import_ok(api, [*lines, "{bad", lines[0]]) == result(
        created=10,
        unchanged=1,
        errors=[
            {
                "line": 11,
                "field": "non_field_errors",
                "detail": (
                    "Not valid JSON: Expecting property name enclosed in double quotes (column 2)."
                ),
            }
        ],
    )


@pytest.mark.parametrize("query", ["dry_run=perhaps", "force=true"])
def test_a_bad_query_parameter_answers_400_naming_it(api, query):
    response = api.post(f"{URL}?{query}", ndjson([{"key": "k", "value": "v"}]), content_type=NDJSON)

    assert_error(response, 400, query.split("=")[0])
    assert stored_rows() == NOTHING_STORED


def without(line: dict, names: set) -> dict:
    return {name: value for name, value in line.items() if name not in names}
