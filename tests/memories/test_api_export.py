"""GET /api/memories/export: every memory of the caller as NDJSON, streamed."""

import json

import pytest
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext

from memories.accounts.tenants import default_tenant
from memories.models import Memory, Persona, Scope, Status
from memories.representations import MemorySerializer
from tests.conftest import key_client, new_key
from tests.memories.helpers import assert_error, bulk_memories, make_memory, make_pending

URL = "/api/memories/export"
LINE_FIELDS = {*MemorySerializer.Meta.fields, "deleted_at", "entities"}


def export(client, **params) -> list[dict]:
    response = client.get(URL, params)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "application/x-ndjson"
    body = b"".join(response.streaming_content).decode()
    assert body == "" or body.endswith("\n")
    return [json.loads(line) for line in body.splitlines()]


@pytest.fixture
def memories(owner, other, api):
    """One memory of the owner in each status, one deleted, and one of another user."""
    active = make_memory(owner, key="language", value="Go with Gin")
    pending = make_pending(owner, key="city", value="Lives in Lisbon")
    archived = make_memory(owner, key="pet", value="Had a cat", status=Status.ARCHIVED)
    deleted = make_memory(owner, key="job", value="Was a nurse")
    assert api.delete(f"/api/memories/{deleted.id}").status_code == 204
    theirs = make_memory(other, key="food", value="Likes ramen")
    return {
        "active": active,
        "pending": pending,
        "archived": archived,
        "deleted": deleted,
        "theirs": theirs,
    }


def test_it_exports_every_status_of_the_callers_live_memories(api, memories):
    lines = export(api)

    assert [line["id"] for line in lines] == [
        str(memories[name].id) for name in ("active", "pending", "archived")
    ]
    assert [line["status"] for line in lines] == ["active", "pending_review", "archived"]
    assert all(line["deleted_at"] is None for line in lines)


def test_include_deleted_adds_the_soft_deleted_memories(api, memories):
    lines = export(api, include_deleted="true")

    assert [line["id"] for line in lines] == [
        str(memories[name].id) for name in ("active", "pending", "archived", "deleted")
    ]
    deleted = lines[-1]
    assert deleted["deleted_at"] is not None
    assert (deleted["key"], deleted["value"]) == ("job", "Was a nurse")


@pytest.mark.parametrize("value", ["false", "0"])
def test_include_deleted_false_leaves_them_out(api, memories, value):
    lines = export(api, include_deleted=value)

    assert str(memories["deleted"].id) not in [line["id"] for line in lines]


def test_each_line_is_the_memory_object_plus_deleted_at_and_entities(api, memories):
    lines = export(api)

    for line in lines:
        assert set(line) == LINE_FIELDS
        detail = api.get(f"/api/memories/{line['id']}").json()
        assert {name: line[name] for name in detail} == detail


def test_another_users_memories_are_not_exported(other_api, memories):
    lines = export(other_api, include_deleted="true")

    assert [line["id"] for line in lines] == [str(memories["theirs"].id)]


def test_a_user_with_no_memories_gets_an_empty_export(other_api):
    assert export(other_api) == []


def test_persona_memories_are_in_the_export_of_staff_only(api, staff_api, owner, staff):
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    shared = make_memory(staff, scope=Scope.PERSONA, persona=persona, value="Be brief")
    personal = make_memory(owner, scope=Scope.PERSONA_USER, persona=persona, value="Likes Go")

    assert [line["id"] for line in export(api)] == [str(personal.id)]
    staff_lines = export(staff_api)
    assert [line["id"] for line in staff_lines] == [str(shared.id)]
    assert staff_lines[0]["persona_id"] == str(persona.id)
    assert staff_lines[0]["owner_id"] == str(persona.id)


def test_the_export_is_streamed_and_reads_memories_only_while_it_is_sent(api, owner):
    bulk_memories(owner, 1200)

    with CaptureQueriesContext(connection) as during_view:
        response = api.get(URL)
    assert isinstance(response, StreamingHttpResponse)
    assert response.streaming
    table = Memory._meta.db_table
    assert not [q for q in during_view.captured_queries if table in q["sql"]]

    with CaptureQueriesContext(connection) as while_sent:
        lines = b"".join(response.streaming_content).splitlines()

    assert len(lines) == 1200
    # Rows are read in chunks of 500 by one cursor, each chunk's entities in one more query;
    # no query per memory.
    assert len(while_sent.captured_queries) <= 6, while_sent.captured_queries
    assert len({json.loads(line)["id"] for line in lines}) == 1200


def test_the_export_is_ordered_oldest_first(api, owner):
    bulk_memories(owner, 30)

    lines = export(api)

    order = [(line["created_at"], line["id"]) for line in lines]
    assert order == sorted(order)


def test_the_export_answers_ndjson_when_asked_for_it(api, memories):
    response = api.get(URL, HTTP_ACCEPT="application/x-ndjson")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"


@pytest.mark.parametrize(
    ("query", "field"), [("include_deleted=maybe", "include_deleted"), ("limit=3", "limit")]
)
def test_a_bad_query_parameter_answers_400_naming_it(api, query, field):
    assert_error(api.get(f"{URL}?{query}"), 400, field)


def test_it_needs_authentication(anon_api):
    assert_error(anon_api.get(URL), 401)


def test_a_key_with_the_read_scope_exports_its_end_users_memories(db):
    client = key_client(new_key("read", "write"), "ext-alice")
    created = client.post("/api/memories", {"key": "city", "value": "Porto"}, format="json")
    assert created.status_code == 201, created.content

    read_only = key_client(new_key("read"), "ext-alice")
    lines = export(read_only)

    assert [line["id"] for line in lines] == [created.json()["id"]]
    assert lines[0]["external_user_id"] == "ext-alice"


def test_a_key_without_the_read_scope_cannot_export(db):
    client = key_client(new_key("write"), "ext-alice")

    assert_error(client.get(URL), 403, "scope")


@pytest.mark.django_db(transaction=True)
def test_the_export_streams_outside_a_transaction_after_the_view_returned(api, owner):
    # As in production: autocommit, and the rows are read while the server sends the
    # response (on PostgreSQL through a server-side cursor that outlives the view).
    bulk_memories(owner, 1200)

    response = api.get(URL)
    assert not connection.in_atomic_block
    lines = b"".join(response.streaming_content).splitlines()

    assert len({json.loads(line)["id"] for line in lines}) == 1200
