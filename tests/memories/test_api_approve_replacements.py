"""POST /api/memories/{id}/approve (and the staff bulk approve) of replacements whose target
is no longer active: re-targeted at the memory that now has the key, so a chain of
replacements never leaves two active memories for one key and scope."""

import threading

import pytest
from django.db import connection

from memories import services
from memories.models import MemoryRevision, Scope, Status
from tests.conftest import client_for, make_user
from tests.memories.helpers import assert_error, make_memory, make_pending


def approve(api, memory):
    return api.post(f"/api/memories/{memory.id}/approve")


def active_values(user, key: str) -> list[str]:
    rows = user.memory_set.filter(key=key, status=Status.ACTIVE, deleted_at__isnull=True)
    return sorted(rows.values_list("value", flat=True))


def approval_note(memory) -> str:
    return MemoryRevision.objects.get(memory=memory, action="approve").note


def test_a_second_replacement_of_an_archived_memory_replaces_the_one_approved_first(api, owner):
    lisbon = make_memory(owner, key="city", value="Lives in Lisbon")
    porto = make_pending(owner, key="city", value="Lives in Porto", supersedes=lisbon)
    braga = make_pending(owner, key="city", value="Lives in Braga", supersedes=lisbon)
    assert approve(api, porto).status_code == 200

    response = approve(api, braga)

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "active"
    assert response.json()["supersedes_id"] == str(porto.id)
    assert active_values(owner, "city") == ["Lives in Braga"]
    porto.refresh_from_db()
    assert (porto.status, porto.deleted_at) == (Status.ARCHIVED, None)
    history = api.get(f"/api/memories/{porto.id}/history").json()["data"]
    assert [r["action"] for r in history] == ["archive", "approve", "create"]
    assert history[0]["note"] == f"superseded by {braga.id}"
    braga_history = api.get(f"/api/memories/{braga.id}/history").json()["data"]
    assert braga_history[0]["before"]["supersedes_id"] == str(lisbon.id)
    assert braga_history[0]["after"]["supersedes_id"] == str(porto.id)
    assert str(lisbon.id) in braga_history[0]["note"]


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)])
def test_replacements_of_one_memory_leave_one_active_in_any_order(api, owner, order):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    proposals = [
        make_pending(owner, key="city", value=f"Lives in {city}", supersedes=old)
        for city in ("Porto", "Braga", "Faro")
    ]

    for index in order:
        assert approve(api, proposals[index]).status_code == 200

    assert active_values(owner, "city") == [proposals[order[-1]].value]
    assert api.get("/api/memories/count").json() == {"active": 1, "pending": 0}


def test_a_replacement_of_a_deleted_memory_replaces_nothing_when_no_memory_has_its_key(api, owner):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    new = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)
    assert api.delete(f"/api/memories/{old.id}").status_code == 204

    response = approve(api, new)

    assert response.status_code == 200, response.json()
    assert response.json()["supersedes_id"] == str(old.id)
    assert active_values(owner, "city") == ["Lives in Porto"]
    assert approval_note(new).startswith("replaces nothing")


def test_a_replacement_of_an_archived_memory_replaces_the_memory_now_holding_its_key(api, owner):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    new = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)
    services.memory_archive(memory_id=old.id, actor=owner)
    written_since = make_memory(owner, key="City", value="Lives in Coimbra")

    assert approve(api, new).status_code == 200

    written_since.refresh_from_db()
    assert written_since.status == Status.ARCHIVED
    assert active_values(owner, "city") == ["Lives in Porto"]


def test_memories_with_the_key_in_another_scope_or_of_another_user_stay_active(api, owner, other):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    new = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)
    services.memory_archive(memory_id=old.id, actor=owner)
    project = services.project_create(owner=owner, name="Trip")
    in_project = make_memory(
        owner, key="city", value="Hotel in Faro", scope=Scope.PROJECT, project=project
    )
    others = make_memory(other, key="city", value="Lives in Braga")

    assert approve(api, new).status_code == 200

    for memory in (in_project, others):
        memory.refresh_from_db()
        assert memory.status == Status.ACTIVE


def test_it_refuses_a_replacement_when_several_active_memories_have_its_key(api, owner):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    new = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)
    services.memory_archive(memory_id=old.id, actor=owner)
    first = make_memory(owner, key="city", value="Lives in Braga")
    second = make_memory(owner, key="city", value="Lives in Faro")

    body = assert_error(approve(api, new), 409)

    assert body["code"] == "conflict"
    assert "no longer active" in body["detail"]
    assert str(first.id) in body["detail"] and str(second.id) in body["detail"]
    assert "reject this one" in body["detail"]
    new.refresh_from_db()
    assert new.status == Status.PENDING_REVIEW
    assert active_values(owner, "city") == ["Lives in Braga", "Lives in Faro"]
    # Once the wrong one is gone, the replacement goes through.
    assert api.delete(f"/api/memories/{second.id}").status_code == 204
    assert approve(api, new).status_code == 200
    assert active_values(owner, "city") == ["Lives in Porto"]


def test_bulk_approve_leaves_a_refused_replacement_pending_and_approves_the_others(
    staff_api, owner
):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    refused = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)
    services.memory_archive(memory_id=old.id, actor=owner)
    make_memory(owner, key="city", value="Lives in Braga")
    make_memory(owner, key="city", value="Lives in Faro")
    fine = make_pending(owner, key="language", value="Speaks Portuguese")

    response = staff_api.post(
        "/api/admin/memories/bulk-approve", {"ids": [str(refused.id), str(fine.id)]}, format="json"
    )

    assert response.status_code == 200, response.json()
    assert response.json() == {"approved": 1}
    refused.refresh_from_db()
    fine.refresh_from_db()
    assert (refused.status, fine.status) == (Status.PENDING_REVIEW, Status.ACTIVE)


def test_approving_the_newest_of_a_chain_of_proposals_archives_the_older_ones(api, owner):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    porto = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)
    braga = make_pending(owner, key="city", value="Lives in Braga", supersedes=porto)

    assert approve(api, braga).status_code == 200

    old.refresh_from_db()
    porto.refresh_from_db()
    assert (old.status, porto.status) == (Status.ARCHIVED, Status.ARCHIVED)
    assert active_values(owner, "city") == ["Lives in Braga"]
    assert assert_error(approve(api, porto), 409)["code"] == "conflict"
    assert active_values(owner, "city") == ["Lives in Braga"]


def test_a_replacement_of_an_active_memory_archives_only_that_one(api, owner):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    new = make_pending(owner, key="city", value="Lives in Porto", supersedes=old)

    response = approve(api, new)

    assert response.json()["supersedes_id"] == str(old.id)
    old.refresh_from_db()
    assert old.status == Status.ARCHIVED
    assert approval_note(new) == ""


@pytest.mark.django_db(transaction=True)
def test_concurrent_approvals_of_two_replacements_leave_one_active():
    user = make_user("concurrent")
    rounds = 4
    errors: list = []
    for _ in range(rounds):
        old = make_memory(user, key="city", value="Lives in Lisbon")
        proposals = [
            make_pending(user, key="city", value=f"Lives in {city}", supersedes=old)
            for city in ("Porto", "Braga")
        ]
        barrier = threading.Barrier(len(proposals))

        def approve_one(memory, barrier=barrier):
            try:
                client = client_for(user)
                barrier.wait(timeout=10)
                response = client.post(f"/api/memories/{memory.id}/approve")
                assert response.status_code == 200, response.content
            except Exception as exc:  # reported below; a thread cannot fail the test itself
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=approve_one, args=(m,)) for m in proposals]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert errors == []
        assert len(active_values(user, "city")) == 1
        user.memory_set.all().delete()
