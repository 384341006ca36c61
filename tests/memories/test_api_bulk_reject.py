"""POST /api/admin/memories/bulk-reject: staff (or a review key) reject pending memories of any
user; ids that are not pending are skipped, as bulk-approve skips them."""

import uuid

import pytest

from memories import services
from memories.accounts.keys import api_key_create
from memories.embeddings.embedders import embed_one
from memories.models import ApiKey, Memory, MemoryRevision, Status
from memories.recall.vector_store import get_vector_store, partition_of
from tests.conftest import end_user, key_client
from tests.memories.helpers import assert_error, make_memory, make_pending

URL = "/api/admin/memories/bulk-reject"


def vector_status(memory: Memory) -> str | None:
    """The status the vector store files the memory's vector under (None: not found)."""
    for status in (Status.ACTIVE, Status.PENDING_REVIEW, Status.ARCHIVED):
        neighbours = get_vector_store().nearest(
            vector=embed_one(memory.embedding_text),
            partitions=[partition_of(memory)],
            k=5,
            status=status,
        )
        if memory.id in {n.memory_id for n in neighbours}:
            return status
    return None


def test_staff_reject_in_bulk_only_what_is_pending(staff_api, staff, owner, other):
    first = make_pending(owner)
    second = make_pending(other, value="Lives in Porto")
    active = make_memory(owner)
    deleted = make_pending(owner, value="Lives in Faro")
    services.memory_delete(memory=deleted, actor=owner)
    ids = [first.id, second.id, active.id, deleted.id, uuid.uuid4(), first.id]

    response = staff_api.post(URL, {"ids": [str(i) for i in ids]}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json() == {"rejected": 2}
    statuses = dict(Memory.objects.values_list("id", "status"))
    assert statuses[first.id] == statuses[second.id] == Status.ARCHIVED
    assert statuses[active.id] == Status.ACTIVE
    assert statuses[deleted.id] == Status.PENDING_REVIEW
    rejections = MemoryRevision.objects.filter(action="reject")
    assert sorted(r.memory_id for r in rejections) == sorted([first.id, second.id])
    assert {r.actor_id for r in rejections} == {staff.id}
    assert all(r.before["status"] == "pending_review" for r in rejections)
    assert vector_status(first) == Status.ARCHIVED


def test_rejecting_a_replacement_leaves_the_memory_it_would_supersede(staff_api, owner):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    new = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)

    response = staff_api.post(URL, {"ids": [str(new.id)]}, format="json")

    assert response.json() == {"rejected": 1}
    old.refresh_from_db()
    new.refresh_from_db()
    assert (new.status, old.status) == (Status.ARCHIVED, Status.ACTIVE)


def test_bulk_reject_of_nothing_pending_rejects_nothing(staff_api, owner):
    active = make_memory(owner)

    response = staff_api.post(URL, {"ids": [str(active.id)]}, format="json")

    assert response.status_code == 200
    assert response.json() == {"rejected": 0}
    assert staff_api.post(URL, {"ids": []}, format="json").json() == {"rejected": 0}
    assert not MemoryRevision.objects.filter(action="reject").exists()


def test_a_normal_user_cannot_reject_in_bulk(api, owner):
    pending = make_pending(owner)

    assert_error(api.post(URL, {"ids": [str(pending.id)]}, format="json"), 403)

    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW


def test_a_key_needs_the_review_scope_and_is_then_the_actor(owner):
    pending = make_pending(end_user(owner))
    body = {"ids": [str(pending.id)]}

    refused = key_client(api_key_create(name="backend", scopes=["read", "write"])[1], None)
    error = assert_error(refused.post(URL, body, format="json"), 403, "scope")
    assert "'review'" in error["detail"]
    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW

    _, raw_key = api_key_create(name="reviewer", scopes=["review"])
    response = key_client(raw_key, None).post(URL, body, format="json")

    assert response.json() == {"rejected": 1}
    revision = MemoryRevision.objects.get(action="reject")
    assert revision.actor == ApiKey.objects.get(name="reviewer").account


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ids": "not-a-list"}, "ids"),
        ({}, "ids"),
        ({"ids": ["not-a-uuid"]}, "ids.0"),
        ({"ids": [], "reject": True}, "reject"),
    ],
)
def test_bulk_reject_refuses_bad_ids(staff_api, owner, body, field):
    pending = make_pending(owner)

    assert_error(staff_api.post(URL, body, format="json"), 400, field)

    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW


def test_one_bad_id_among_good_ones_rejects_nothing(staff_api, owner):
    pending = make_pending(owner)

    response = staff_api.post(URL, {"ids": [str(pending.id), 42]}, format="json")

    assert_error(response, 400, "ids.1")
    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW
    assert not MemoryRevision.objects.filter(action="reject").exists()


def test_bulk_reject_is_in_the_openapi_schema(staff_api):
    schema = staff_api.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    operation = schema["paths"]["/api/admin/memories/bulk-reject"]["post"]
    response = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert response == {"$ref": "#/components/schemas/RejectedCount"}
