"""The review page for someone who reviews hundreds a day, in a real headless Chromium: approve
and reject on each card, the keyboard shortcuts the page shows, the dashboard's last runs and
failures with their errors, the source and age filters, the quoted messages and their
conversation, and the consolidation proposals with the memories they merge or archive."""

import re
from datetime import timedelta
from uuid import uuid4

import pytest
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus, SourceKind
from memories.consolidation import consolidation_scan
from memories.models import (
    ConsolidationProposal,
    Memory,
    MemoryRevision,
    ProposalStatus,
    Source,
    Status,
)
from tests.memories.helpers import make_memory, make_pending
from tests.review.test_browser import extracted_from_a_conversation, log_in, pending_count

pytestmark = pytest.mark.django_db(transaction=True)


def card(page, memory: Memory):
    return page.locator(f'li.candidate[data-id="{memory.id}"]')


def status_of(memory: Memory) -> str:
    return Memory.objects.get(id=memory.id).status


def flash(page) -> str:
    page.wait_for_selector("ul.messages")
    return page.locator("ul.messages li").first.inner_text()


# --- The queue -----------------------------------------------------------------------------------


def test_each_card_approves_or_rejects_only_itself(browser_page, live_server, owner):
    tea, bees, oslo = (
        make_pending(owner, key=key, value=value)
        for key, value in [("drink", "Likes tea"), ("hobby", "Keeps bees"), ("city", "Oslo")]
    )
    page = browser_page
    log_in(page, live_server)
    card(page, oslo).locator("input.row-select").check()  # a selection the buttons ignore

    card(page, bees).get_by_role("button", name="Approve", exact=True).click()
    assert flash(page) == "Approved “hobby”."
    card(page, tea).get_by_role("button", name="Reject", exact=True).click()
    assert flash(page) == "Rejected “drink”."

    assert (status_of(tea), status_of(bees), status_of(oslo)) == (
        Status.ARCHIVED,
        Status.ACTIVE,
        Status.PENDING_REVIEW,
    )
    assert pending_count(page) == 1
    assert page.locator("li.candidate").count() == 1


def test_the_page_shows_its_keyboard_shortcuts(browser_page, live_server, owner):
    make_pending(owner)
    page = browser_page
    log_in(page, live_server)

    shortcuts = page.locator("#shortcuts")

    assert shortcuts.is_visible()
    keys = shortcuts.locator("kbd").all_inner_texts()
    assert keys == ["j", "k", "a", "r", "s", "x", "e"]
    text = shortcuts.inner_text()
    for words in ("next/previous", "approve", "reject", "select all", "edit"):
        assert words in text


def test_the_keyboard_moves_between_cards_and_decides_the_current_one(
    browser_page, live_server, owner
):
    now = timezone.now()
    memories = [make_pending(owner, key=f"fact {i}", value=f"Likes colour {i}") for i in range(4)]
    for age, memory in enumerate(memories):  # newest first on the page: fact 0, 1, 2, 3
        Memory.objects.filter(id=memory.id).update(created_at=now - timedelta(minutes=age))
    first, second, third, fourth = memories
    page = browser_page
    log_in(page, live_server)

    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.locator("li.candidate.current").get_attribute("data-id") == str(second.id)
    page.keyboard.press("a")
    assert flash(page) == "Approved “fact 1”."
    assert status_of(second) == Status.ACTIVE

    for key in "jjjk":  # a new page: fact 0, 2, 3; down three (to the last), up one
        page.keyboard.press(key)
    assert page.locator("li.candidate.current").get_attribute("data-id") == str(third.id)
    page.keyboard.press("r")
    assert flash(page) == "Rejected “fact 2”."
    assert status_of(third) == Status.ARCHIVED

    page.keyboard.press("j")
    page.keyboard.press("s")
    assert page.locator("#selected-count").inner_text() == "1 selected"
    assert card(page, first).locator("input.row-select").is_checked()
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.wait_for_url(re.compile(rf"/review/memories/{fourth.id}/edit"))
    assert status_of(first) == status_of(fourth) == Status.PENDING_REVIEW


def test_staff_filter_the_queue_by_source_and_age_in_the_browser(browser_page, live_server, owner):
    chat = make_pending(owner, key="drink", value="Likes tea")
    old_chat = make_pending(owner, key="city", value="Lives in Oslo")
    Memory.objects.filter(id=old_chat.id).update(created_at=timezone.now() - timedelta(days=10))
    work = make_memory(
        owner,
        key="deploy",
        value="Deploys on Tuesdays",
        source=Source.WORK,
        status=Status.PENDING_REVIEW,
        actor=None,
    )
    page = browser_page
    log_in(page, live_server)
    assert pending_count(page) == 3

    page.select_option("select[name=source]", "conversation")
    page.select_option("select[name=age]", "older-week")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"age=older-week"))
    assert page.locator("li.candidate").evaluate_all("els => els.map(e => e.dataset.id)") == [
        str(old_chat.id)
    ]

    page.select_option("select[name=source]", "work")
    page.select_option("select[name=age]", "day")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"source=work"))
    assert pending_count(page) == 1
    assert card(page, work).is_visible() and not card(page, chat).count()


def test_the_quote_beside_a_candidate_links_to_its_conversation(browser_page, live_server, owner):
    extracted = {m.key: m for m in extracted_from_a_conversation(owner)}
    page = browser_page
    log_in(page, live_server)
    job = card(page, extracted["job"])

    quote = job.locator("aside.provenance blockquote.quote")
    assert quote.inner_text().endswith("I work as a nurse at St. Mary hospital, nights mostly.")
    assert quote.is_visible()
    job.get_by_role("link", name=re.compile("the conversation")).click()

    page.wait_for_url(re.compile(r"/review/conversations/topic/"))
    cited = page.locator("li.message.cited")
    assert cited.count() == 1
    assert "nurse at St. Mary" in cited.inner_text()
    assert cited.is_visible()
    assert page.locator("li.message").count() == 4


# --- The dashboard -------------------------------------------------------------------------------


def test_the_dashboard_lists_the_last_runs_and_failures_with_their_errors(
    browser_page, live_server, owner
):
    for status, reason, extractor in [
        (RunStatus.DONE, "", "rules"),
        (RunStatus.SKIPPED, "no new messages", ""),
        (RunStatus.FAILED, "APITimeoutError: Request timed out.", "llm"),
        (RunStatus.FAILED, "MalformedOutput: no JSON object in the answer", "llm"),
    ]:
        ExtractionRun.objects.create(
            task_id=str(uuid4()),
            user=owner,
            source_kind=SourceKind.TOPIC,
            source_id=uuid4(),
            status=status,
            reason=reason,
            extractor=extractor,
            created=2 if status == RunStatus.DONE else 0,
            finished_at=timezone.now(),
        )
    page = browser_page
    log_in(page, live_server, "/review/")

    assert page.locator("#runs-total").inner_text() == "3"
    assert page.locator("#runs-skipped").inner_text() == "1"
    assert page.locator("#runs-failed").inner_text() == "2"
    failures = page.locator("#failures tbody tr")
    assert failures.count() == 2
    assert "MalformedOutput: no JSON object" in failures.nth(0).inner_text()
    assert "APITimeoutError" in failures.nth(1).inner_text()
    runs = page.locator("#runs tbody tr")
    assert runs.count() == 3  # skipped runs are not listed as extractions
    assert [runs.nth(i).locator(".status").inner_text() for i in range(3)] == [
        "failed",
        "failed",
        "done",
    ]
    assert "2 · 0 · 0" in runs.nth(2).inner_text()
    assert "owner" in runs.nth(2).inner_text()


# --- Consolidation proposals -------------------------------------------------------------------


@pytest.fixture
def proposals(owner, openai_embedder, settings):
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


def test_staff_see_what_each_proposal_merges_or_archives(
    browser_page, live_server, proposals, artifacts
):
    page = browser_page
    log_in(page, live_server, "/review/")
    assert page.locator("#proposals-pending").inner_text() == "2"
    page.locator("a.card.proposals").click()
    page.wait_for_url(re.compile(r"/review/proposals$"))

    merge = page.locator(f'li.proposal[data-id="{proposals["merge"].id}"]')
    members = merge.locator("li.member")
    assert members.count() == 2
    kept = merge.locator("li.member.kept")
    assert kept.get_attribute("data-memory-id") == str(proposals["new"].id)
    assert "kept, takes the merged text" in kept.inner_text()
    assert merge.locator("textarea[name=value]").input_value() == proposals["new"].value
    archive = page.locator(f'li.proposal[data-id="{proposals["archive"].id}"]')
    assert "Drives a Fiat" in archive.inner_text()
    assert "not recalled or updated for 300 days" in archive.inner_text()
    page.screenshot(path=artifacts / "proposals-1400px.png")


def test_staff_approve_a_merge_with_their_own_text_and_reject_an_archival(
    browser_page, live_server, proposals
):
    page = browser_page
    log_in(page, live_server, "/review/proposals")
    merge = page.locator(f'li.proposal[data-id="{proposals["merge"].id}"]')

    merge.locator("input[name=key]").fill("ui theme")
    merge.locator("textarea[name=value]").fill("Dark mode in every editor and window")
    merge.get_by_role("button", name="Approve merge").click()
    assert flash(page) == "Approved the merge of 2 memories."
    page.locator(f'li.proposal[data-id="{proposals["archive"].id}"]').get_by_role(
        "button", name="Reject"
    ).click()
    assert flash(page) == "Rejected the archival of 1 memory."

    kept = Memory.objects.get(id=proposals["new"].id)
    assert (kept.key, kept.value, kept.status) == (
        "ui theme",
        "Dark mode in every editor and window",
        Status.ACTIVE,
    )
    assert status_of(proposals["old"]) == Status.ARCHIVED
    assert status_of(proposals["car"]) == Status.ACTIVE
    assert MemoryRevision.objects.filter(memory=kept, action="merge").get().actor.username == "root"
    statuses = dict(ConsolidationProposal.objects.values_list("kind", "status"))
    assert statuses == {"merge": ProposalStatus.APPROVED, "archive": ProposalStatus.REJECTED}
    assert page.locator("li.proposal").count() == 0
    assert "No proposal waiting" in page.locator("p.empty").inner_text()
