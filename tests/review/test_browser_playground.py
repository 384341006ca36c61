"""The recall playground (issue 48, item 2) in a real headless Chromium against the live
server: staff type a message on a user's page and see the hint and every memory considered,
with the reason of each excluded one and bars that carry the API's score parts.
Screenshots at 1366 px and 390 px wide go to tests/artifacts/ (playground-*.png)."""

import re

import pytest

from memories.models import User
from tests.conftest import client_for
from tests.review.test_browser import fits_the_width, log_in

pytestmark = pytest.mark.django_db(transaction=True)

PROFILE = [
    {"key": "music", "value": "Loves 1970s jazz fusion"},
    {"key": "home", "value": "Lives in Porto, near the river"},
    {"key": "dogs", "value": "Has two dogs, Pip and Olive"},
    {"key": "diet", "value": "Vegetarian, and allergic to peanuts"},
    {"key": "style", "value": "Prefers short answers", "pinned": True},
]


def lena() -> User:
    user = User.objects.create_user(username="lena")
    api = client_for(user)
    for memory in PROFILE:
        assert api.post("/api/memories", memory, format="json").status_code == 201
    return user


@pytest.mark.parametrize(
    "browser_page", [(1366, 900), (390, 844)], ids=["1366px", "390px"], indirect=True
)
def test_staff_try_a_message_and_see_what_the_model_would_get_and_why(
    browser_page, live_server, artifacts, request
):
    user = lena()
    page = browser_page
    log_in(page, live_server, next_path=f"/review/users/{user.id}")

    page.get_by_label("Message").fill("Who wrote the Odyssey?")
    page.get_by_role("button", name="Recall").click()
    page.wait_for_url(re.compile(r"recall-message="))

    # Only the pinned memory heads the hint: nothing else is about this question.
    hint = page.locator("#playground-hint").inner_text()
    assert "Prefers short answers" in hint and "jazz" not in hint
    music = page.locator("#playground-candidates tr[data-key=music]")
    assert music.get_attribute("data-decision") == "excluded"
    assert "not about the user and too far from the question" in music.inner_text()
    assert page.locator("#playground-reading .about-user").inner_text().endswith(
        "not read as about the user"
    )

    page.get_by_label("Message").fill("What should I cook for dinner tonight?")
    page.get_by_role("button", name="Recall").click()
    page.wait_for_load_state()
    explained = client_for(user).post(
        "/api/memories/context",
        {"query": "What should I cook for dinner tonight?", "explain": True},
        format="json",
    )
    parts = {
        c["memory"]["key"]: c["score_parts"] for c in explained.json()["explanation"]["candidates"]
    }
    diet = page.locator("#playground-candidates tr[data-key=diet]")
    assert diet.get_attribute("data-decision") == "returned"
    bars = {
        rect.get_attribute("data-part"): float(rect.get_attribute("data-value"))
        for rect in diet.locator("rect").all()
    }
    assert bars == pytest.approx({p: v for p, v in parts["diet"].items() if v > 0})
    assert diet.locator("svg.score-bar").is_visible()
    assert fits_the_width(page)
    width = request.node.callspec.id.split("-")[0]
    page.screenshot(path=str(artifacts / f"playground-{width}.png"), full_page=True)
