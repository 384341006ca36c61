"""PUT and PATCH /api/memories/{id} with the read-only fields of a memory: sent back as GET
gives them they are fine, changed they are refused, saying how to make that change."""

import uuid

import pytest

from memories.models import Memory, MemoryRevision
from tests.memories.helpers import assert_error, make_memory

OTHER_ID = str(uuid.uuid4())
LONG_AGO = "2020-01-01T00:00:00Z"

# Each read-only field with a value the memory does not have, and words of the answer that
# say how to make the change.
CHANGES = [
    ("status", "archived", "/approve or /reject"),
    ("status", "pending_review", "DELETE /api/memories/"),
    ("scope", "project", "Create a new memory"),
    ("scope", "persona_user", "Create a new memory"),
    ("owner_id", OTHER_ID, "Create a new memory"),
    ("user_id", OTHER_ID, "Create a new memory"),
    ("external_user_id", "someone-else", "Create a new memory"),
    ("persona_id", OTHER_ID, "Create a new memory"),
    ("project_id", OTHER_ID, "Create a new memory"),
    ("topic_id", OTHER_ID, "Create a new memory"),
    ("id", OTHER_ID, "kept by the service"),
    ("source", "tool", "kept by the service"),
    ("source_channel_id", OTHER_ID, "kept by the service"),
    ("supersedes_id", OTHER_ID, "kept by the service"),
    ("access_count", 99, "kept by the service"),
    ("access_count", False, "kept by the service"),
    ("last_accessed_at", LONG_AGO, "kept by the service"),
    ("created_at", LONG_AGO, "kept by the service"),
    ("updated_at", LONG_AGO, "kept by the service"),
]


def url(memory) -> str:
    return f"/api/memories/{memory.id}"


@pytest.fixture
def memory(owner) -> Memory:
    return make_memory(owner, key="food", value="Loves pizza", category="taste")


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(("field", "value", "how"), CHANGES)
def test_a_changed_read_only_field_is_400_saying_how_to_change_it(
    api, memory, method, field, value, how
):
    before = Memory.objects.values().get(id=memory.id)

    response = getattr(api, method)(url(memory), {field: value}, format="json")

    body = assert_error(response, 400, field)
    assert how in body["fields"][field][0], body
    assert Memory.objects.values().get(id=memory.id) == before
    assert MemoryRevision.objects.filter(memory=memory).count() == 1


@pytest.mark.parametrize("method", ["put", "patch"])
def test_an_edit_beside_a_changed_read_only_field_is_not_applied(api, memory, method):
    before = Memory.objects.values().get(id=memory.id)

    response = getattr(api, method)(
        url(memory), {"value": "Loves sushi", "status": "archived"}, format="json"
    )

    assert_error(response, 400, "status")
    assert Memory.objects.values().get(id=memory.id) == before
    assert MemoryRevision.objects.filter(memory=memory).count() == 1


def test_every_changed_read_only_field_is_named(api, memory):
    response = api.patch(
        url(memory), {"scope": "project", "status": "archived", "access_count": 99}, format="json"
    )

    body = assert_error(response, 400)
    assert set(body["fields"]) == {"scope", "status", "access_count"}


@pytest.mark.parametrize("method", ["put", "patch"])
def test_the_get_body_sent_back_with_one_edit_is_applied(api, memory, method):
    body = api.get(url(memory)).json()
    body["value"] = "Loves sushi"

    response = getattr(api, method)(url(memory), body, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["value"] == "Loves sushi"
    memory.refresh_from_db()
    assert memory.value == "Loves sushi"
    assert MemoryRevision.objects.filter(memory=memory, action="edit").count() == 1


def test_the_get_body_of_a_recalled_memory_sent_back_is_fine(api, owner):
    memory = make_memory(owner, key="city", value="Lives in Lisbon")
    assert api.get("/api/memories/search", {"q": "Lisbon"}).json()["data"]
    body = api.get(url(memory)).json()
    assert body["access_count"] == 1 and body["last_accessed_at"] is not None
    body["importance"] = 0.9

    response = api.put(url(memory), body, format="json")

    assert response.status_code == 200, response.json()
    memory.refresh_from_db()
    assert memory.importance == 0.9


def test_read_only_fields_sent_back_unchanged_change_nothing(api, memory):
    body = api.get(url(memory)).json()
    before = Memory.objects.values().get(id=memory.id)

    response = api.patch(
        url(memory),
        {
            **{name: body[name] for name in ("id", "status", "access_count", "created_at")},
            "scope": "global",  # another name for user
        },
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert Memory.objects.values().get(id=memory.id) == before
    assert MemoryRevision.objects.filter(memory=memory).count() == 1
