"""/api/admin/consolidation-proposals: reviewers (staff, review keys) list consolidation
proposals and approve or reject them; approving a merge keeps one memory with the merged text
and archives the others, approving an archival archives; every history stays."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from memories import services
from memories.accounts.keys import api_key_create
from memories.consolidation import consolidation_scan
from memories.models import ConsolidationProposal, Memory, MemoryRevision, ProposalStatus, Status
from tests.conftest import end_user, make_user
from tests.memories.helpers import assert_error, make_memory

URL = "/api/admin/consolidation-proposals"
DARK = "Prefers dark mode in every editor"
DARK_WINDOW = "Prefers dark mode in every editor window"


@pytest.fixture(autouse=True)
def consolidation(settings, openai_embedder):
    settings.CONSOLIDATION_SIMILARITY = 0.9
    settings.CONSOLIDATION_STALE_DAYS = 180
    settings.CONSOLIDATION_STALE_MAX_IMPORTANCE = 0.8


def stale(memory: Memory, days: int = 200) -> Memory:
    long_ago = timezone.now() - timedelta(days=days)
    Memory.objects.filter(id=memory.id).update(created_at=long_ago, updated_at=long_ago)
    return memory


@pytest.fixture
def proposed(owner) -> dict:
    """A merge of two near-duplicates and an archival, as consolidation proposes them, for
    an end user of the default tenant (its review keys administer them)."""
    end_user(owner)
    old = make_memory(owner, key="ui", value=DARK, importance=0.9, confidence=0.6)
    new = make_memory(owner, key="ui", value=DARK_WINDOW, importance=0.3, confidence=0.8)
    car = stale(make_memory(owner, key="car", value="Drives a Fiat"))
    consolidation_scan()
    return {
        "old": old,
        "new": new,
        "car": car,
        "merge": ConsolidationProposal.objects.get(kind="merge"),
        "archive": ConsolidationProposal.objects.get(kind="archive"),
    }


def actions(memory: Memory) -> list[str]:
    return list(MemoryRevision.objects.filter(memory=memory).order_by("id").values_list("action"))


# --- Who may ----------------------------------------------------------------------------------


def test_users_who_are_not_staff_are_refused(api, proposed):
    assert_error(api.get(URL), 403)
    assert_error(api.post(f"{URL}/{proposed['merge'].id}/approve"), 403)
    assert ConsolidationProposal.objects.filter(status="pending").count() == 2


def test_a_key_needs_the_review_scope(proposed):
    _, write_key = api_key_create(name="backend", scopes=["read", "write"])
    _, review_key = api_key_create(name="reviewer", scopes=["review"])
    client = APIClient()

    client.credentials(HTTP_AUTHORIZATION=f"Bearer {write_key}")
    assert assert_error(client.get(URL), 403, "scope")["code"] == "missing_scope"
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {review_key}")
    response = client.post(f"{URL}/{proposed['archive'].id}/approve")
    assert response.status_code == 200, response.content[:500]
    assert response.json()["status"] == "approved"


# --- Reading ----------------------------------------------------------------------------------


def test_staff_list_pending_proposals_with_their_memories(staff_api, proposed, owner):
    response = staff_api.get(URL)

    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body["count"] == 2
    by_kind = {p["kind"]: p for p in body["data"]}
    merge = by_kind["merge"]
    assert merge["status"] == "pending" and merge["user_id"] == str(owner.id)
    assert [m["value"] for m in merge["memories"]] == [DARK, DARK_WINDOW]
    # The ids a webhook receiver matches them by (proposal.created carries this object).
    assert merge["memory_ids"] == sorted(m["id"] for m in merge["memories"])
    assert merge["keep_id"] == str(proposed["new"].id)
    assert (merge["key"], merge["value"]) == ("ui", DARK_WINDOW)
    assert merge["similarity"] == pytest.approx(0.935, abs=1e-3)
    assert merge["decided_at"] is None and merge["decided_by_id"] is None
    archival = by_kind["archive"]
    assert [m["id"] for m in archival["memories"]] == [str(proposed["car"].id)]
    assert (archival["keep_id"], archival["key"], archival["value"]) == (None, "", "")
    assert archival["reason"].startswith("not recalled or updated for 200 days")


def test_the_list_filters_by_kind_status_and_user(staff_api, proposed, other):
    staff_api.post(f"{URL}/{proposed['archive'].id}/reject")

    def ids(**query):
        return [p["id"] for p in staff_api.get(URL, query).json()["data"]]

    assert ids() == [str(proposed["merge"].id)]
    assert ids(status="rejected") == [str(proposed["archive"].id)]
    assert ids(kind="archive") == []
    assert ids(user_id=str(other.id)) == []
    assert_error(staff_api.get(URL, {"status": "maybe"}), 400, "status")


def test_one_proposal_by_id(staff_api, proposed):
    response = staff_api.get(f"{URL}/{proposed['merge'].id}")

    assert response.status_code == 200
    assert response.json()["id"] == str(proposed["merge"].id)
    assert_error(staff_api.get(f"{URL}/{proposed['old'].id}"), 404, "id")
    assert_error(staff_api.get(f"{URL}/not-a-uuid"), 404, "id")


def test_the_list_costs_the_same_queries_for_more_proposals(staff_api, owner, other):
    def queries() -> int:
        with CaptureQueriesContext(connection) as context:
            assert staff_api.get(URL).status_code == 200
        return len(context.captured_queries)

    make_memory(owner, key="ui", value=DARK)
    make_memory(owner, key="ui", value=DARK_WINDOW)
    consolidation_scan()
    few = queries()
    for user in (other, make_user("third")):
        make_memory(user, key="ui", value=DARK)
        make_memory(user, key="ui", value=DARK_WINDOW)
        stale(make_memory(user, key="car", value="Drives a Fiat"))
    consolidation_scan()

    assert ConsolidationProposal.objects.count() == 5
    assert queries() == few


# --- Approving and rejecting --------------------------------------------------------------------


def test_approving_a_merge_keeps_one_memory_and_archives_the_others_with_history(
    staff_api, staff, proposed, api
):
    old, new = proposed["old"], proposed["new"]

    response = staff_api.post(f"{URL}/{proposed['merge'].id}/approve")

    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert (body["status"], body["decided_by_id"]) == ("approved", str(staff.id))
    kept = Memory.objects.get(id=new.id)
    assert (kept.status, kept.key, kept.value) == (Status.ACTIVE, "ui", DARK_WINDOW)
    assert (kept.importance, kept.confidence) == (0.9, 0.8)  # the highest of the two
    assert Memory.objects.get(id=old.id).status == Status.ARCHIVED
    assert actions(new) == [("create",), ("merge",)]
    assert actions(old) == [("create",), ("archive",)]
    merge = MemoryRevision.objects.get(memory=new, action="merge")
    assert (merge.actor, merge.before["importance"], merge.after["importance"]) == (staff, 0.3, 0.9)
    archive = MemoryRevision.objects.get(memory=old, action="archive")
    assert archive.note == f"merged into {new.id}"
    history = api.get(f"/api/memories/{old.id}/history").json()["data"]
    assert [revision["action"] for revision in history] == ["archive", "create"]
    assert Memory.objects.filter(id=old.id, deleted_at__isnull=True).exists()


def test_a_merge_approved_with_the_reviewers_text_takes_it_and_is_found_by_it(
    staff_api, proposed, api
):
    response = staff_api.post(
        f"{URL}/{proposed['merge'].id}/approve",
        {"key": "ui theme", "value": "Dark mode in every editor and window"},
        format="json",
    )

    assert response.status_code == 200, response.content[:500]
    kept = Memory.objects.get(id=proposed["new"].id)
    assert (kept.key, kept.value) == ("ui theme", "Dark mode in every editor and window")
    found = api.get("/api/memories/search", {"q": "ui theme dark window"}).json()["data"]
    assert found[0]["id"] == str(kept.id)
    assert str(proposed["old"].id) not in [m["id"] for m in found]


def test_approving_an_archival_archives_the_memory(staff_api, staff, proposed):
    response = staff_api.post(f"{URL}/{proposed['archive'].id}/approve")

    assert response.status_code == 200, response.content[:500]
    car = Memory.objects.get(id=proposed["car"].id)
    assert car.status == Status.ARCHIVED
    last = MemoryRevision.objects.filter(memory=car).latest("id")
    assert (last.action, last.actor) == ("archive", staff)
    assert str(proposed["archive"].id) in last.note
    assert Memory.objects.get(id=proposed["old"].id).status == Status.ACTIVE


def test_rejecting_changes_no_memory(staff_api, proposed):
    before = list(Memory.objects.order_by("id").values())

    response = staff_api.post(f"{URL}/{proposed['merge'].id}/reject")

    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert list(Memory.objects.order_by("id").values()) == before


@pytest.mark.parametrize("first", ["approve", "reject"])
@pytest.mark.parametrize("second", ["approve", "reject"])
def test_a_decided_proposal_cannot_be_decided_again(staff_api, proposed, first, second):
    url = f"{URL}/{proposed['archive'].id}"
    assert staff_api.post(f"{url}/{first}").status_code == 200

    body = assert_error(staff_api.post(f"{url}/{second}"), 409)

    assert "already" in body["detail"]


def test_approving_after_a_memory_changed_is_409_and_changes_nothing(staff_api, owner, proposed):
    services.memory_update(memory=proposed["old"], actor=owner, changes={"category": "ui"})
    before = list(Memory.objects.order_by("id").values())

    body = assert_error(staff_api.post(f"{URL}/{proposed['merge'].id}/approve"), 409)

    assert "changed after the proposal" in body["detail"] and "reject it" in body["detail"]
    assert list(Memory.objects.order_by("id").values()) == before
    assert ConsolidationProposal.objects.get(id=proposed["merge"].id).status == "pending"


def test_approving_after_a_memory_was_deleted_is_409(staff_api, owner, proposed):
    services.memory_delete(memory=proposed["new"], actor=owner)

    body = assert_error(staff_api.post(f"{URL}/{proposed['merge'].id}/approve"), 409)

    assert "was deleted" in body["detail"]
    assert Memory.objects.get(id=proposed["old"].id).status == Status.ACTIVE


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        ("archive", {"key": "car"}, "key"),
        ("merge", {"value": ""}, "value"),
        ("merge", {"key": "k" * 1000}, "key"),
        ("merge", {"keep_id": "x"}, "keep_id"),
    ],
    ids=["text for an archival", "blank value", "key too long", "unknown field"],
)
def test_a_bad_approval_body_is_400_and_changes_nothing(staff_api, proposed, kind, body, field):
    before = list(Memory.objects.order_by("id").values())

    assert_error(
        staff_api.post(f"{URL}/{proposed[kind].id}/approve", body, format="json"), 400, field
    )

    assert list(Memory.objects.order_by("id").values()) == before
    assert ConsolidationProposal.objects.filter(status=ProposalStatus.PENDING).count() == 2


def test_an_unknown_proposal_is_404(staff_api, db):
    assert_error(staff_api.post(f"{URL}/{uuid.uuid4()}/approve"), 404, "id")
