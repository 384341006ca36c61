"""Approve, reject, history, and the staff endpoints /api/admin/memories/...."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories import services
from memories.embeddings.embedders import embed_one
from memories.models import Memory, MemoryRevision, Status
from memories.recall.vector_store import get_vector_store, partition_of
from tests.memories.helpers import (
    assert_error,
    bulk_memories,
    make_memory,
    make_pending,
)


def url(memory, action: str = "") -> str:
    return f"/api/memories/{memory.id}" + (f"/{action}" if action else "")


def found_by_vector_search(memory: Memory, status: str) -> bool:
    neighbours = get_vector_store().nearest(
        vector=embed_one(memory.embedding_text),
        partitions=[partition_of(memory)],
        k=5,
        status=status,
    )
    return memory.id in {n.memory_id for n in neighbours}


# --- approve and reject --------------------------------------------------------------------------


def test_it_approves_a_pending_memory(api, owner):
    memory = make_pending(owner)
    assert not found_by_vector_search(memory, "active")

    response = api.post(url(memory, "approve"))

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "active"
    memory.refresh_from_db()
    assert memory.status == Status.ACTIVE
    assert found_by_vector_search(memory, "active")
    assert not found_by_vector_search(memory, "pending_review")
    assert api.get("/api/memories/count").json() == {"active": 1, "pending": 0}


def test_it_rejects_a_pending_memory(api, owner):
    memory = make_pending(owner)

    response = api.post(url(memory, "reject"))

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "archived"
    memory.refresh_from_db()
    assert memory.status == Status.ARCHIVED
    assert memory.deleted_at is None
    assert not found_by_vector_search(memory, "active")
    assert api.get("/api/memories/count").json() == {"active": 0, "pending": 0}


@pytest.mark.parametrize("action", ["approve", "reject"])
@pytest.mark.parametrize("status", ["active", "archived"])
def test_it_answers_409_when_the_memory_is_not_pending(api, owner, action, status):
    memory = make_memory(owner, status=status)

    response = api.post(url(memory, action))

    body = assert_error(response, 409)
    assert body["code"] == "conflict"
    memory.refresh_from_db()
    assert memory.status == status
    assert MemoryRevision.objects.filter(memory=memory).count() == 1


def test_a_second_approval_is_a_conflict(api, owner):
    memory = make_pending(owner)
    assert api.post(url(memory, "approve")).status_code == 200

    body = assert_error(api.post(url(memory, "approve")), 409)

    assert body["code"] == "conflict"
    assert_error(api.post(url(memory, "reject")), 409)
    memory.refresh_from_db()
    assert memory.status == Status.ACTIVE
    assert MemoryRevision.objects.filter(memory=memory, action="approve").count() == 1


def test_approving_a_replacement_archives_the_memory_it_supersedes(api, owner):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    new = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)

    assert api.post(url(new, "approve")).status_code == 200

    old.refresh_from_db()
    new.refresh_from_db()
    assert (new.status, old.status) == (Status.ACTIVE, Status.ARCHIVED)
    assert old.deleted_at is None


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_approve_and_reject_answer_404_for_a_non_uuid(api, action):
    assert_error(api.post(f"/api/memories/nope/{action}"), 404, "id")


# --- history -------------------------------------------------------------------------------------


def test_history_lists_create_then_edits_newest_first(api, owner):
    created = api.post(
        "/api/memories", {"key": "food", "value": "Loves pizza"}, format="json"
    ).json()
    api.patch(f"/api/memories/{created['id']}", {"value": "Loves sushi"}, format="json")
    api.patch(f"/api/memories/{created['id']}", {"importance": 0.9}, format="json")

    response = api.get(f"/api/memories/{created['id']}/history")

    assert response.status_code == 200
    data = response.json()["data"]
    assert [r["action"] for r in data] == ["edit", "edit", "create"]
    assert all(r["actor_id"] == str(owner.id) for r in data)
    latest, value_edit, create = data
    assert latest["before"]["importance"] == 0.5
    assert latest["after"]["importance"] == 0.9
    assert value_edit["before"]["value"] == "Loves pizza"
    assert value_edit["after"]["value"] == "Loves sushi"
    assert create["before"] is None
    assert create["after"]["value"] == "Loves pizza"


def test_history_records_approval_with_the_status_before(api, owner):
    memory = make_pending(owner)

    api.post(url(memory, "approve"))
    data = api.get(url(memory, "history")).json()["data"]

    assert [r["action"] for r in data] == ["approve", "create"]
    assert data[0]["actor_id"] == str(owner.id)
    assert data[0]["before"]["status"] == "pending_review"
    assert data[0]["after"]["status"] == "active"
    assert data[1]["actor_id"] is None  # extraction made it


def test_history_records_rejection_with_the_status_before(api, owner):
    memory = make_pending(owner)

    api.post(url(memory, "reject"))
    data = api.get(url(memory, "history")).json()["data"]

    assert [r["action"] for r in data] == ["reject", "create"]
    assert data[0]["actor_id"] == str(owner.id)
    assert data[0]["before"]["status"] == "pending_review"
    assert data[0]["after"]["status"] == "archived"


def test_history_of_an_edit_then_approval_keeps_both(api, owner):
    memory = make_pending(owner, value="Lives in Lisbon")

    api.patch(url(memory), {"value": "Lives in Lisbon, Portugal"}, format="json")
    api.post(url(memory, "approve"))
    data = api.get(url(memory, "history")).json()["data"]

    assert [r["action"] for r in data] == ["approve", "edit", "create"]
    assert data[1]["before"]["value"] == "Lives in Lisbon"
    assert data[0]["before"]["value"] == "Lives in Lisbon, Portugal"


def test_history_answers_404_for_an_unknown_memory(api):
    assert_error(api.get(f"/api/memories/{uuid.uuid4()}/history"), 404, "id")


# --- staff endpoints ----------------------------------------------------------------------------


def test_staff_see_pending_memories_of_all_users(staff_api, owner, other):
    mine = make_pending(owner)
    theirs = make_pending(other, value="Lives in Porto")
    make_memory(owner)
    deleted = make_pending(other, value="Lives in Faro")
    Memory.objects.filter(id=deleted.id).update(deleted_at=timezone.now())

    response = staff_api.get("/api/admin/memories/pending")

    assert response.status_code == 200
    body = response.json()
    assert {m["id"] for m in body["data"]} == {str(mine.id), str(theirs.id)}
    assert body["count"] == 2
    assert all(m["status"] == "pending_review" for m in body["data"])


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/admin/memories/pending"),
        ("post", "/api/admin/memories/bulk-approve"),
        ("post", "/api/personas"),
    ],
)
def test_staff_endpoints_refuse_a_normal_user(api, owner, method, path):
    pending = make_pending(owner)
    body = {"ids": [str(pending.id)]} if "bulk" in path else {"name": "Tutor"}

    response = getattr(api, method)(path, body, format="json")

    assert_error(response, 403)
    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW
    assert "Tutor" not in response.content.decode()


def test_staff_approve_in_bulk_only_what_is_pending(staff_api, staff, owner, other):
    first = make_pending(owner)
    second = make_pending(other, value="Lives in Porto")
    active = make_memory(owner)
    archived = make_memory(owner, key="old", value="Old fact", status=Status.ARCHIVED)
    deleted = make_pending(owner, value="Lives in Faro")
    services.memory_delete(memory=deleted, actor=owner)
    ids = [first.id, second.id, active.id, archived.id, deleted.id, uuid.uuid4(), first.id]

    response = staff_api.post(
        "/api/admin/memories/bulk-approve", {"ids": [str(i) for i in ids]}, format="json"
    )

    assert response.status_code == 200, response.json()
    assert response.json() == {"approved": 2}
    statuses = dict(Memory.objects.values_list("id", "status"))
    assert statuses[first.id] == statuses[second.id] == Status.ACTIVE
    assert statuses[active.id] == Status.ACTIVE
    assert statuses[archived.id] == Status.ARCHIVED
    assert statuses[deleted.id] == Status.PENDING_REVIEW
    approvals = MemoryRevision.objects.filter(action="approve")
    assert sorted(r.memory_id for r in approvals) == sorted([first.id, second.id])
    assert {r.actor_id for r in approvals} == {staff.id}
    assert found_by_vector_search(first, "active")


def test_bulk_approve_of_nothing_pending_approves_nothing(staff_api, owner):
    active = make_memory(owner)

    response = staff_api.post(
        "/api/admin/memories/bulk-approve", {"ids": [str(active.id)]}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {"approved": 0}
    assert staff_api.post(
        "/api/admin/memories/bulk-approve", {"ids": []}, format="json"
    ).json() == {"approved": 0}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ids": "not-a-list"}, "ids"),
        ({"ids": "6f1c1f5e-7f43-4a53-9a0e-3f0c5b8f8f10"}, "ids"),
        ({"ids": {"a": 1}}, "ids"),
        ({"ids": None}, "ids"),
        ({}, "ids"),
        ({"ids": ["not-a-uuid"]}, "ids.0"),
        ({"ids": [[]]}, "ids.0"),
        ({"ids": [], "approve": True}, "approve"),
    ],
)
def test_bulk_approve_rejects_bad_ids(staff_api, owner, body, field):
    pending = make_pending(owner)

    response = staff_api.post("/api/admin/memories/bulk-approve", body, format="json")

    assert_error(response, 400, field)
    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW


@pytest.mark.parametrize("bad", ["not-a-uuid", 42, True, None, ""])
def test_one_bad_id_among_good_ones_approves_nothing(staff_api, owner, bad):
    pending = make_pending(owner)

    response = staff_api.post(
        "/api/admin/memories/bulk-approve", {"ids": [str(pending.id), bad]}, format="json"
    )

    assert_error(response, 400, "ids.1")
    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW
    assert not MemoryRevision.objects.filter(action="approve").exists()


def test_bulk_approve_rejects_a_body_that_is_not_an_object(staff_api, owner):
    pending = make_pending(owner)

    response = staff_api.post("/api/admin/memories/bulk-approve", [str(pending.id)], format="json")

    assert_error(response, 400)
    pending.refresh_from_db()
    assert pending.status == Status.PENDING_REVIEW


def test_pending_list_is_paginated(staff_api, owner):
    bulk_memories(owner, 3, status=Status.PENDING_REVIEW)

    body = staff_api.get("/api/admin/memories/pending", {"page_size": 2}).json()

    assert set(body) == {"data", "count", "next", "previous"}
    assert (body["count"], len(body["data"])) == (3, 2)
    assert body["next"] is not None


def test_the_pending_list_runs_the_same_number_of_queries_for_3_and_30_memories(
    staff_api, owner, other
):
    def queries_for(count: int) -> tuple[int, int]:
        Memory.objects.all().delete()
        bulk_memories(owner, count // 3 * 2, status=Status.PENDING_REVIEW)
        bulk_memories(other, count // 3, status=Status.PENDING_REVIEW)
        with CaptureQueriesContext(connection) as captured:
            response = staff_api.get("/api/admin/memories/pending")
        assert response.status_code == 200
        return len(captured), len(response.json()["data"])

    few, few_listed = queries_for(3)
    many, many_listed = queries_for(30)

    assert (few_listed, many_listed) == (3, 30)
    assert few == many


def test_history_runs_the_same_number_of_queries_for_3_and_30_revisions(api, owner):
    memory = make_memory(owner)
    history = url(memory, "history")

    def queries_for(count: int) -> tuple[int, int]:
        MemoryRevision.objects.filter(memory=memory).delete()
        MemoryRevision.objects.bulk_create(
            MemoryRevision(memory=memory, action="edit", actor=owner, before={"value": str(i)})
            for i in range(count)
        )
        with CaptureQueriesContext(connection) as captured:
            response = api.get(history)
        assert response.status_code == 200
        return len(captured), len(response.json()["data"])

    few, few_listed = queries_for(3)
    many, many_listed = queries_for(30)

    assert (few_listed, many_listed) == (3, 30)
    assert few == many
