"""Approving and rejecting one card, and the consolidation proposals page, through the Django
test client: real URLs, then the redirect, the page and the database rows."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories import services
from memories.consolidation import consolidation_scan
from memories.models import ConsolidationProposal, Memory, MemoryRevision, Status
from tests.conftest import make_user
from tests.memories.helpers import make_memory, make_pending
from tests.review.html import messages_of, page_of

QUEUE = "/review/queue"
PROPOSALS = "/review/proposals"


def decide_url(memory: Memory) -> str:
    return f"/review/memories/{memory.id}/decide"


def redirected_to(response) -> str:
    assert response.status_code == 302, (response.status_code, response.content[:300])
    return response["Location"]


# --- One card ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "status", "message"),
    [
        ("approve", Status.ACTIVE, "Approved “city”."),
        ("reject", Status.ARCHIVED, "Rejected “city”."),
    ],
)
def test_a_cards_button_decides_that_memory_only(
    staff_client, staff, owner, action, status, message
):
    city = make_pending(owner, key="city", value="Lives in Oslo")
    other = make_pending(owner, key="pet", value="Has a cat")
    back = f"{QUEUE}?source=conversation"

    response = staff_client.post(
        decide_url(city), {"action": action, "next": back, "ids": [str(other.id)]}
    )

    assert redirected_to(response) == back
    assert Memory.objects.get(id=city.id).status == status
    assert Memory.objects.get(id=other.id).status == Status.PENDING_REVIEW
    last = MemoryRevision.objects.filter(memory=city).latest("id")
    assert (last.action, last.actor) == (action, staff)
    assert messages_of(page_of(staff_client.get(back))) == [message]


def test_a_card_that_is_no_longer_pending_says_so_and_changes_nothing(staff_client, staff, owner):
    city = make_pending(owner, key="city", value="Lives in Oslo")
    services.memory_review(memory_ids=[city.id], actor=staff, decision="reject")

    response = staff_client.post(decide_url(city), {"action": "approve"})

    assert redirected_to(response) == QUEUE
    assert Memory.objects.get(id=city.id).status == Status.ARCHIVED
    [message] = messages_of(page_of(staff_client.get(QUEUE)))
    assert "this one is archived" in message


def test_a_card_action_other_than_approve_or_reject_changes_nothing(staff_client, owner):
    city = make_pending(owner, key="city", value="Lives in Oslo")

    staff_client.post(decide_url(city), {"action": "delete"})

    assert Memory.objects.get(id=city.id).status == Status.PENDING_REVIEW
    assert "Approve or reject" in messages_of(page_of(staff_client.get(QUEUE)))[0]


def test_a_card_post_without_the_csrf_token_is_refused(staff, owner):
    city = make_pending(owner, key="city", value="Lives in Oslo")
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)

    assert client.post(decide_url(city), {"action": "approve"}).status_code == 403
    assert Memory.objects.get(id=city.id).status == Status.PENDING_REVIEW


def test_each_card_has_its_own_buttons_posting_to_its_own_url(staff_client, owner):
    city = make_pending(owner, key="city", value="Lives in Oslo")

    card = page_of(staff_client.get(QUEUE)).find("li", data_id=str(city.id))

    buttons = card.find("div", cls="actions").find_all("button")
    assert [(b.attrs["value"], b.attrs["formaction"]) for b in buttons] == [
        ("approve", decide_url(city)),
        ("reject", decide_url(city)),
    ]


# --- Proposals ---------------------------------------------------------------------------------


@pytest.fixture
def proposals(owner, openai_embedder, settings) -> dict:
    settings.CONSOLIDATION_SIMILARITY = 0.9
    old = make_memory(owner, key="ui", value="Prefers dark mode in every editor")
    new = make_memory(owner, key="ui", value="Prefers dark mode in every editor window")
    car = make_memory(owner, key="car", value="Drives a Fiat")
    long_ago = timezone.now() - timedelta(days=300)
    Memory.objects.filter(id=car.id).update(created_at=long_ago, updated_at=long_ago)
    consolidation_scan()
    return {
        "old": old,
        "new": new,
        "car": car,
        "merge": ConsolidationProposal.objects.get(kind="merge"),
        "archive": ConsolidationProposal.objects.get(kind="archive"),
    }


def decide_proposal(client, proposal, **data):
    return client.post(f"/review/proposals/{proposal.id}/decide", {"next": PROPOSALS, **data})


def test_the_proposals_page_shows_the_memories_each_merges_or_archives(staff_client, proposals):
    page = page_of(staff_client.get(PROPOSALS))

    assert page.find(id="proposal-count").text == "2"
    merge = page.find("li", data_id=str(proposals["merge"].id))
    members = merge.find_all("li", cls="member")
    assert [m.attrs["data-memory-id"] for m in members] == [
        str(proposals["old"].id),
        str(proposals["new"].id),
    ]
    assert [m.attrs["data-memory-id"] for m in members if "kept" in m.classes] == [
        str(proposals["new"].id)
    ]
    form = merge.find("form").form_data()
    assert (form["key"], form["value"]) == ("ui", "Prefers dark mode in every editor window")
    archive = page.find("li", data_id=str(proposals["archive"].id))
    assert "car: Drives a Fiat" in archive.find("p", cls="fact").text
    assert archive.find_all("fieldset") == []


def test_the_proposals_page_filters_by_kind(staff_client, proposals):
    page = page_of(staff_client.get(PROPOSALS, {"kind": "archive"}))

    ids = [li.attrs["data-id"] for li in page.find_all("li", cls="proposal")]
    assert ids == [str(proposals["archive"].id)]


def test_approving_a_merge_on_the_page_takes_the_reviewers_text(staff_client, staff, proposals):
    response = decide_proposal(
        staff_client, proposals["merge"], action="approve", key="ui theme", value="Dark mode"
    )

    assert redirected_to(response) == PROPOSALS
    kept = Memory.objects.get(id=proposals["new"].id)
    assert (kept.key, kept.value, kept.status) == ("ui theme", "Dark mode", Status.ACTIVE)
    assert Memory.objects.get(id=proposals["old"].id).status == Status.ARCHIVED
    page = page_of(staff_client.get(PROPOSALS))
    assert messages_of(page) == ["Approved the merge of 2 memories."]
    assert [li.attrs["data-id"] for li in page.find_all("li", cls="proposal")] == [
        str(proposals["archive"].id)
    ]
    merge = ConsolidationProposal.objects.get(id=proposals["merge"].id)
    assert (merge.status, merge.decided_by) == ("approved", staff)


def test_approving_an_archival_on_the_page_archives_the_memory(staff_client, proposals):
    decide_proposal(staff_client, proposals["archive"], action="approve", key="", value="")

    assert Memory.objects.get(id=proposals["car"].id).status == Status.ARCHIVED
    assert Memory.objects.get(id=proposals["new"].id).status == Status.ACTIVE


def test_a_proposal_whose_memories_changed_is_refused_with_the_reason(
    staff_client, owner, proposals
):
    services.memory_delete(memory=proposals["old"], actor=owner)

    decide_proposal(staff_client, proposals["merge"], action="approve")

    assert Memory.objects.get(id=proposals["new"].id).status == Status.ACTIVE
    [message] = messages_of(page_of(staff_client.get(PROPOSALS)))
    assert "was deleted" in message and "reject it" in message
    decide_proposal(staff_client, proposals["merge"], action="reject")
    assert ConsolidationProposal.objects.get(id=proposals["merge"].id).status == "rejected"


def test_an_invalid_decision_changes_nothing(staff_client, proposals):
    before = list(Memory.objects.order_by("id").values())

    decide_proposal(staff_client, proposals["merge"], action="approve", key="k" * 500)
    decide_proposal(staff_client, proposals["merge"], action="merge them")

    assert list(Memory.objects.order_by("id").values()) == before
    assert ConsolidationProposal.objects.filter(status="pending").count() == 2
    errors = messages_of(page_of(staff_client.get(PROPOSALS)))
    assert len(errors) == 2 and all(e.startswith("Nothing was changed") for e in errors)


def test_the_proposals_page_costs_the_same_queries_for_more_proposals(staff_client, proposals):
    def queries() -> int:
        with CaptureQueriesContext(connection) as context:
            page_of(staff_client.get(PROPOSALS))
        return len(context.captured_queries)

    few = queries()
    for name in ("third", "fourth"):
        user = make_user(name)
        make_memory(user, key="ui", value="Prefers dark mode in every editor")
        make_memory(user, key="ui", value="Prefers dark mode in every editor window")
    consolidation_scan()

    assert ConsolidationProposal.objects.count() == 4
    assert queries() == few
