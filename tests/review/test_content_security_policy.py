"""A Content-Security-Policy on the review pages, the admin and the API docs, and all three
still work under it in a real headless Chromium with nothing refused."""

import re

import pytest

from memories.models import Memory
from tests.memories.helpers import make_memory, make_pending

POLICY = "Content-Security-Policy"


def directives(response) -> dict[str, list[str]]:
    policy = response[POLICY]
    parts = (part.split() for part in policy.split(";") if part.strip())
    return {name: values for name, *values in parts}


@pytest.mark.parametrize(
    "path",
    ["/review/", "/review/queue", "/review/proposals", "/admin/", "/admin/memories/memory/"],
)
def test_review_and_admin_pages_allow_only_this_sites_scripts_and_styles(superuser_client, path):
    response = superuser_client.get(path)

    assert response.status_code == 200
    policy = directives(response)
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]


def test_the_login_page_has_the_policy_too(client):
    assert directives(client.get("/admin/login/"))["script-src"] == ["'self'"]


def test_the_api_docs_allow_inline_styles_but_no_inline_script(client):
    response = client.get("/api/docs/")

    policy = directives(response)
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'", "'unsafe-inline'"]


# --- In Chromium ---------------------------------------------------------------------------

VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


@pytest.fixture
def guarded_page(browser_page):
    """A tab that records every Content-Security-Policy refusal, as events and as console
    messages; the test ends by asserting there were none."""
    page = browser_page
    refused: list[str] = []
    page.add_init_script(VIOLATIONS)
    page.on(
        "console",
        lambda message: (
            refused.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )

    def check():
        refused.extend(page.evaluate("window.__violations || []"))
        assert refused == [], refused

    page.check_policy = check
    yield page
    check()


@pytest.mark.django_db(transaction=True)
def test_the_admin_and_review_pages_work_under_the_policy_in_chromium(
    guarded_page, live_server, owner
):
    from memories.models import User

    User.objects.create_superuser("root", "root@example.com", "pw-root")
    pending = [make_pending(owner, key=f"fact {i}", value=f"Likes colour {i}") for i in range(3)]
    active = make_memory(owner, key="city", value="Lives in Porto")
    page = guarded_page

    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw-root")
    page.click("input[type=submit]")
    page.wait_for_url(re.compile(r"/admin/$"))

    # The changelist's scripts: select all, then the action counter they keep.
    page.goto(f"{live_server.url}/admin/memories/memory/")
    page.check("#action-toggle")
    assert "4 of 4 selected" in page.locator(".action-counter").inner_text()
    page.goto(f"{live_server.url}/admin/memories/memory/{active.id}/change/")
    assert page.locator("#id_value").input_value() == "Lives in Porto"
    page.check_policy()

    # The review queue's script: x selects all, a approves the selection.
    page.goto(f"{live_server.url}/review/queue")
    page.keyboard.press("x")
    assert page.locator("#selected-count").inner_text() == "3 selected"
    page.keyboard.press("a")
    page.wait_for_selector("ul.messages")
    assert not Memory.objects.filter(id__in=[m.id for m in pending], status="pending_review")
    page.goto(f"{live_server.url}/review/")
    assert page.locator("#count-pending").inner_text() == "0"
    page.check_policy()


@pytest.mark.django_db(transaction=True)
def test_the_api_docs_render_the_operations_under_the_policy_in_chromium(guarded_page, live_server):
    page = guarded_page

    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock-summary-path")

    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/memories" in path for path in paths)
    page.check_policy()


@pytest.mark.django_db(transaction=True)
def test_the_cards_keyboard_proposals_and_conversation_pages_work_under_the_policy(
    guarded_page, live_server, owner
):
    from memories.models import Topic, User

    User.objects.create_superuser("root", "root@example.com", "pw-root")
    topic = Topic.objects.create(user=owner, title="Chat")
    message = topic.messages.create(role="user", content="I keep bees.")
    pending = make_pending(owner, key="hobby", value="Keeps bees")
    Memory.objects.filter(id=pending.id).update(source_topic=topic, source_message_ids=[message.id])
    page = guarded_page
    page.goto(f"{live_server.url}/admin/login/?next=/review/queue")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw-root")
    page.click("input[type=submit]")
    page.wait_for_url(re.compile(r"/review/queue$"))

    page.keyboard.press("j")
    assert page.locator("li.candidate.current").count() == 1
    page.locator("aside.provenance a.conversation").click()
    page.wait_for_url(re.compile(r"/review/conversations/topic/"))
    assert page.locator("li.message.cited").count() == 1
    page.goto(f"{live_server.url}/review/proposals")
    page.goto(f"{live_server.url}/review/queue")
    page.keyboard.press("j")
    page.keyboard.press("a")
    page.wait_for_selector("ul.messages")
    assert Memory.objects.get(id=pending.id).status == "active"
    page.check_policy()
