"""The review pages in a real headless Chromium (Playwright, sync API) against the live server:
log in through the admin, select, approve, edit, keyboard shortcuts; screenshots of the queue
and the dashboard at 1400 px and 420 px wide go to tests/artifacts/ (queue-1400px.png and
queue-420px.png are kept in the repository)."""

import re
from datetime import UTC, datetime
from uuid import uuid4

import pytest
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus, SourceKind
from memories import services
from memories.accounts.tenants import default_tenant
from memories.models import (
    Entity,
    Memory,
    MemoryRevision,
    Persona,
    RevisionAction,
    Scope,
    Source,
    Status,
    User,
)
from tests.conftest import client_for
from tests.memories.helpers import bulk_memories, make_memory, make_pending

pytestmark = pytest.mark.django_db(transaction=True)

LAPTOP = (1400, 900)
PHONE = (420, 900)
SIZES = pytest.mark.parametrize(
    "browser_page", [LAPTOP, PHONE], ids=["1400px", "420px"], indirect=True
)


def log_in(page, live_server, next_path: str = "/review/queue"):
    """Sign in through the admin login form as a staff superuser, landing on next_path."""
    if not User.objects.filter(username="root").exists():
        User.objects.create_superuser("root", "root@example.com", "pw-root")
    page.goto(f"{live_server.url}/admin/login/?next={next_path}")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw-root")
    page.click("input[type=submit]")
    page.wait_for_url(re.compile(re.escape(next_path) + "$"))


def pending_count(page) -> int:
    return int(page.locator("#pending-count").inner_text())


def fits_the_width(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def extracted_from_a_conversation(user) -> list[Memory]:
    """Candidates the rule-based extractor proposes from a conversation of the user (through
    the API), each citing the message it was read from."""
    api = client_for(user)
    topic = api.post("/api/topics", {"title": "Settling in Lisbon"}, format="json").json()
    for role, text in [
        ("user", "Hi! I just moved and need help with paperwork."),
        ("assistant", "Happy to help. Where did you move to?"),
        ("user", "My name is Dana and I live in Lisbon."),
        ("user", "I work as a nurse at St. Mary hospital, nights mostly."),
    ]:
        api.post(
            f"/api/topics/{topic['id']}/messages", {"role": role, "content": text}, format="json"
        )
    assert api.post(f"/api/memories/extract/{topic['id']}").json()["status"] == "done"
    return list(Memory.objects.filter(source_topic_id=topic["id"]))


def realistic_queue(owner, other) -> dict:
    """Several candidates as extraction leaves them: some quoting the conversation they came
    from, plain ones with similar memories of their user, a replacement proposal, a project
    one and a persona one. The extracted ones come last, so they are first in the queue."""
    project = services.project_create(owner=owner, name="Checkout service")
    tutor = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    make_memory(owner, key="pet", value="Has a dog called Rex", category="family")
    make_memory(owner, key="sport", value="Plays tennis on Sundays", category="hobbies")
    make_memory(owner, key="food", value="Vegetarian, likes Thai curries", category="food")
    make_memory(other, key="language", value="Speaks Greek and English", category="languages")
    old_city = make_memory(owner, key="city", value="Lives in Porto", category="places")
    candidates = {
        "dog": make_pending(
            owner, key="pet", value="Walks Rex the dog every morning", category="family"
        ),
        "tennis": make_pending(
            owner, key="sport", value="Joined a tennis club in 2024", category="hobbies"
        ),
        "city": make_pending(
            owner,
            key="city",
            value="Moved to Lisbon in March; works remotely from there",
            category="places",
            supersedes=old_city,
        ),
        "project": make_pending(
            owner,
            key="payments",
            value="The checkout service talks to Stripe through a queue",
            scope=Scope.PROJECT,
            project=project,
            category="architecture",
        ),
        "greek": make_pending(
            other,
            key="language",
            value="Is learning Greek with a tutor twice a week",
            scope=Scope.PERSONA_USER,
            persona=tutor,
            category="languages",
        ),
    }
    extracted = extracted_from_a_conversation(owner)
    # "I live in Lisbon" is proposed under the user's own key, "city" (extraction/keys.py):
    # the candidates made above keep their names.
    return {**{memory.key: memory for memory in extracted}, **candidates}


def test_staff_select_a_page_and_approve_it_in_the_browser(browser_page, live_server, owner):
    oldest = [make_pending(owner, key=f"fact {i}", value=f"Likes colour {i}") for i in range(2)]
    bulk_memories(owner, 25, status=Status.PENDING_REVIEW, source=Source.CONVERSATION)
    page = browser_page
    log_in(page, live_server)
    on_page = page.locator("li.candidate").evaluate_all("els => els.map(e => e.dataset.id)")
    assert pending_count(page) == 27 and len(on_page) == 25

    page.get_by_text("Select all on this page").click()
    assert page.locator("#selected-count").inner_text() == "25 selected"
    assert page.locator("li.candidate.selected").count() == 25
    page.get_by_role("button", name="Approve selected").click()
    page.wait_for_selector("ul.messages")

    assert pending_count(page) == 2
    assert page.locator("ul.messages li.success").inner_text() == "Approved 25 memories."
    assert page.locator("li.candidate").count() == 2
    approved = set(Memory.objects.filter(status=Status.ACTIVE).values_list("id", flat=True))
    assert {str(i) for i in approved} == set(on_page)
    still_pending = Memory.objects.filter(status=Status.PENDING_REVIEW).values_list("id", flat=True)
    assert set(still_pending) == {m.id for m in oldest}


def test_staff_edit_a_candidate_before_approving_it_in_the_browser(
    browser_page, live_server, owner
):
    city = make_pending(owner, key="city", value="Lives in Lisbon", category="places")
    other = make_pending(owner, key="pet", value="Has a cat")
    page = browser_page
    log_in(page, live_server)
    assert pending_count(page) == 2

    page.locator(f'li.candidate[data-id="{city.id}"]').get_by_role(
        "link", name="Edit before approving"
    ).click()
    page.wait_for_url(re.compile(rf"/review/memories/{city.id}/edit"))
    assert page.locator("#id_value").input_value() == "Lives in Lisbon"
    page.fill("#id_value", "Lives in Lisbon, near the Tagus")
    page.get_by_role("button", name="Save and approve").click()
    page.wait_for_url(re.compile(r"/review/queue$"))

    assert pending_count(page) == 1
    assert "approved" in page.locator("ul.messages li.success").inner_text()
    stored = Memory.objects.get(id=city.id)
    assert (stored.value, stored.status) == ("Lives in Lisbon, near the Tagus", Status.ACTIVE)
    actions = MemoryRevision.objects.filter(memory=city).order_by("id").values_list("action")
    assert [a for (a,) in actions] == [
        RevisionAction.CREATE,
        RevisionAction.EDIT,
        RevisionAction.APPROVE,
    ]
    assert Memory.objects.get(id=other.id).status == Status.PENDING_REVIEW


def test_the_edit_page_shows_metadata_read_only_and_an_edit_keeps_it(
    browser_page, live_server, owner
):
    city = make_pending(owner, key="city", value="Lives in Lisbon")
    metadata = {"app": "ios", "note": "<script>alert(1)</script>", "ticket": {"id": 7}}
    Memory.objects.filter(id=city.id).update(metadata=metadata)
    page = browser_page
    log_in(page, live_server)

    page.goto(f"{live_server.url}/review/memories/{city.id}/edit")
    shown = page.locator("details.metadata pre").inner_text()
    assert '"app": "ios"' in shown and '"id": 7' in shown
    assert "<script>alert(1)</script>" in shown  # as text, escaped, not run
    assert page.locator("form.edit-form textarea, form.edit-form input").evaluate_all(
        "fields => fields.every(f => f.name !== 'metadata')"
    )
    page.fill("#id_value", "Lives in Lisbon, near the Tagus")
    page.get_by_role("button", name="Save and approve").click()
    page.wait_for_url(re.compile(r"/review/queue$"))

    stored = Memory.objects.get(id=city.id)
    assert stored.value == "Lives in Lisbon, near the Tagus" and stored.metadata == metadata


def test_the_x_key_toggles_select_all(browser_page, live_server, owner):
    for i in range(3):
        make_pending(owner, key=f"fact {i}", value=f"Likes colour {i}")
    page = browser_page
    log_in(page, live_server)
    boxes = page.locator("input.row-select")

    page.keyboard.press("x")
    assert [boxes.nth(i).is_checked() for i in range(3)] == [True, True, True]
    assert page.locator("#select-all").is_checked()
    assert page.locator("#selected-count").inner_text() == "3 selected"

    page.keyboard.press("x")
    assert [boxes.nth(i).is_checked() for i in range(3)] == [False, False, False]
    assert page.locator("#selected-count").inner_text() == "0 selected"

    page.fill("input[name=category]", "")
    page.locator("input[name=category]").press("x")
    assert page.locator("input[name=category]").input_value() == "x"
    assert page.locator("#selected-count").inner_text() == "0 selected"
    assert Memory.objects.filter(status=Status.PENDING_REVIEW).count() == 3


def test_the_a_key_approves_only_the_selection(browser_page, live_server, owner):
    first, second = (make_pending(owner, key=f"fact {i}", value=f"Likes {i}") for i in range(2))
    page = browser_page
    log_in(page, live_server)

    page.keyboard.press("a")  # nothing selected: nothing happens
    page.locator(f'li.candidate[data-id="{first.id}"] input.row-select').check()
    page.keyboard.press("a")
    page.wait_for_selector("ul.messages")

    assert page.locator("ul.messages li.success").inner_text() == "Approved 1 memory."
    assert Memory.objects.get(id=first.id).status == Status.ACTIVE
    assert Memory.objects.get(id=second.id).status == Status.PENDING_REVIEW


@SIZES
def test_the_queue_fits_the_screen_and_shows_replacements_and_similar_memories(
    browser_page, live_server, owner, other, artifacts, request
):
    candidates = realistic_queue(owner, other)
    page = browser_page
    log_in(page, live_server)

    city = page.locator(f'li.candidate[data-id="{candidates["city"].id}"]')
    assert city.locator(".compare .old").inner_text().count("Lives in Porto") == 1
    assert "Moved to Lisbon" in city.locator(".compare .new").inner_text()
    assert city.locator(".compare .old").is_visible() and city.locator(".compare .new").is_visible()
    dog = page.locator(f'li.candidate[data-id="{candidates["dog"].id}"]')
    assert "Has a dog called Rex" in dog.locator("details.similar li").first.inner_text()
    assert dog.locator("details.similar li").first.is_visible()
    assert page.get_by_role("button", name="Approve selected").is_visible()
    assert pending_count(page) == 8
    job = page.locator(f'li.candidate[data-id="{candidates["job"].id}"]')
    assert "nurse at St. Mary hospital" in job.locator("blockquote.quote").inner_text()
    assert job.get_by_role("button", name="Approve", exact=True).is_visible()
    assert page.locator("#shortcuts").is_visible()
    size = request.node.callspec.id
    page.screenshot(path=artifacts / f"queue-{size}.png")
    page.screenshot(path=artifacts / f"queue-{size}-full.png", full_page=True)
    assert fits_the_width(page)


@SIZES
def test_the_dashboard_fits_the_screen(browser_page, live_server, owner, other, artifacts, request):
    realistic_queue(owner, other)
    for status, reason in [
        (RunStatus.DONE, ""),
        (RunStatus.DONE, ""),
        (RunStatus.SKIPPED, "no new user messages"),
        (RunStatus.FAILED, "LLM request timed out after 3 attempts (read timeout 30 s)"),
    ]:
        ExtractionRun.objects.create(
            task_id=str(uuid4()),
            source_kind=SourceKind.TOPIC,
            source_id=uuid4(),
            status=status,
            reason=reason,
            finished_at=timezone.now(),
        )
    page = browser_page
    log_in(page, live_server, "/review/")

    assert page.locator("#count-pending").inner_text() == "8"
    assert page.locator("#runs-total").inner_text() == "4"  # the extraction's run and 3 here
    assert page.locator("#runs-skipped").inner_text() == "1"
    assert page.locator("#runs-failed").inner_text() == "1"
    assert "timed out" in page.locator("#failures").inner_text()
    assert "timed out" in page.locator("#runs").inner_text()
    size = request.node.callspec.id
    page.screenshot(path=artifacts / f"dashboard-{size}.png")
    page.screenshot(path=artifacts / f"dashboard-{size}-full.png", full_page=True)
    assert fits_the_width(page)


def test_staff_pin_a_candidate_while_approving_it_in_the_browser(browser_page, live_server, owner):
    style = make_pending(owner, key="answer style", value="Prefers short answers")
    page = browser_page
    log_in(page, live_server, next_path=f"/review/memories/{style.id}/edit")

    pinned = page.get_by_label("Pinned (in every context hint)")
    assert not pinned.is_checked()
    pinned.check()
    page.get_by_role("button", name="Save and approve").click()
    page.wait_for_url(re.compile(r"/review/queue$"))

    stored = Memory.objects.get(id=style.id)
    assert (stored.pinned, stored.status) == (True, Status.ACTIVE)
    response = client_for(owner).post(
        "/api/memories/context", {"query": "What is 7 times 8?"}, format="json"
    )
    assert "Prefers short answers" in response.json()["hint"]


def test_staff_give_a_candidate_an_expiry_in_the_browser(browser_page, live_server, owner):
    trip = make_pending(owner, key="trip", value="In Lisbon this week", category="travel")
    page = browser_page
    log_in(page, live_server, next_path=f"/review/memories/{trip.id}/edit")

    expires = page.get_by_label("Expires at (UTC)")
    assert expires.get_attribute("type") == "datetime-local" and expires.input_value() == ""
    expires.fill("2099-05-31T23:59")
    page.get_by_role("button", name="Save and approve").click()
    page.wait_for_url(re.compile(r"/review/queue$"))

    stored = Memory.objects.get(id=trip.id)
    assert stored.status == Status.ACTIVE
    assert stored.expires_at == datetime(2099, 5, 31, 23, 59, tzinfo=UTC)
    shown = client_for(owner).get(f"/api/memories/{trip.id}").json()
    assert shown["expires_at"] == "2099-05-31T23:59:00Z"


def test_staff_rename_and_merge_a_users_entities_in_the_browser(browser_page, live_server, owner):
    api = client_for(owner)
    for key, value, name in [
        ("pet", "Has a dog called Pip", "Pip"),
        ("walks", "Walks Pipster every morning", "Pipster"),
    ]:
        body = {"key": key, "value": value, "entities": [{"name": name, "kind": "pet"}]}
        assert api.post("/api/memories", body, format="json").status_code == 201
    pip, pipster = Entity.objects.order_by("name")
    page = browser_page
    log_in(page, live_server, next_path="/review/entities")

    card = page.locator(f'li.entity[data-id="{pip.id}"]')
    assert "Has a dog called Pip" in card.inner_text()
    card.locator("summary").click()
    card.get_by_label("Relation").fill("dog")
    card.get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(r"/review/entities$"))
    assert Entity.objects.get(id=pip.id).relation == "dog"

    card = page.locator(f'li.entity[data-id="{pip.id}"]')
    card.locator("select[name=other]").select_option(str(pipster.id))
    card.get_by_role("button", name="Merge").click()
    page.wait_for_url(re.compile(r"/review/entities$"))

    assert "Merged" in page.locator("ul.messages li.success").inner_text()
    [merged] = Entity.objects.all()
    assert (merged.id, merged.aliases, merged.memories.count()) == (pip.id, ["Pipster"], 2)
    assert (
        "Walks Pipster every morning" in page.locator(f'li.entity[data-id="{pip.id}"]').inner_text()
    )
