"""The users explorer (issue 48, item 1) in a real headless Chromium against the live server:
staff find a user by external id, read their memories and the timeline (a replaced fact with
its old and new value), erase them only with the external id typed again; a review key of
another tenant gets 404. Screenshots of the list and the user page at 1366 px and 390 px wide
go to tests/artifacts/ (users-*.png, user-*.png)."""

import re

import pytest
from django.conf import settings
from django.test import Client

from memories import services
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
from memories.models import Memory, Scope, Status, User
from tests.conftest import client_for, end_user, make_user
from tests.memories.helpers import make_memory, make_pending
from tests.review.test_browser import fits_the_width, log_in

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = pytest.mark.parametrize(
    "browser_page", [(1366, 900), (390, 844)], ids=["1366px", "390px"], indirect=True
)


def save(user: User, key: str, value: str, **fields) -> dict:
    """Save a memory through POST /api/memories as the user, as a product does."""
    response = client_for(user).post(
        "/api/memories", {"key": key, "value": value, **fields}, format="json"
    )
    assert response.status_code == 201, response.content[:300]
    return response.json()


def dana_with_memories() -> tuple[User, dict]:
    """An end user of the default tenant with memories of several categories, a pinned one,
    one about a person, a project one, a pending one and "home" replaced: Lisbon, then
    Madrid. Some other users beside her."""
    dana = end_user(make_user("dana"), "ext-Dana-7")
    for index, name in enumerate(("erin", "farid", "grace")):
        other = end_user(make_user(name), f"ext-{name}-{index}")
        make_memory(other, key="pet", value=f"{name}'s pet")
    lisbon = save(dana, "home", "Lisbon", category="places")
    madrid = save(dana, "home", "Madrid", category="places")
    save(
        dana,
        "wife",
        "Married to Priya, a pianist",
        category="family",
        entities=[{"name": "Priya", "relation": "wife", "kind": "person"}],
        pinned=True,
    )
    save(
        dana,
        "pet",
        "Has a cat called Miso who hates the vacuum cleaner",
        category="family",
        importance=0.7,
    )
    save(dana, "job", "Works night shifts as a nurse at St. Mary hospital", category="work")
    save(dana, "diet", "Vegetarian since 2019")
    project = services.project_create(owner=dana, name="Bakery website")
    make_memory(
        dana,
        key="stack",
        value="Django and HTMX",
        scope=Scope.PROJECT,
        project=project,
        category="work",
    )
    make_pending(dana, key="sport", value="Started running marathons")
    return dana, {"lisbon": lisbon, "madrid": madrid}


@SIZES
def test_staff_find_a_user_and_read_a_replaced_fact_on_the_timeline(
    browser_page, live_server, artifacts, request
):
    dana, saved = dana_with_memories()
    page = browser_page
    size = request.node.callspec.id
    log_in(page, live_server, next_path="/review/users")

    assert page.locator("tr.user-row").count() == 5  # four end users and the root login
    page.get_by_label("External id or username").fill("DANA-7")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"q=DANA-7"))
    assert page.locator("tr.user-row").count() == 1
    row = page.locator("tr.user-row")
    assert row.locator("td.count-active").inner_text() == "6"
    assert row.locator("td.count-pending").inner_text() == "1"
    assert row.locator("td.count-archived").inner_text() == "1"
    page.screenshot(path=artifacts / f"users-{size}.png", full_page=True)
    assert fits_the_width(page)

    row.get_by_role("link", name="ext-Dana-7").click()
    page.wait_for_url(re.compile(rf"/review/users/{dana.id}$"))

    assert page.locator("h1").inner_text() == "ext-Dana-7"
    categories = page.locator("th.category").all_inner_texts()
    assert [c.lower() for c in categories] == ["family", "places", "work", "no category"]
    wife = page.locator("tr.memory.pinned")
    assert "Married to Priya" in wife.inner_text() and "Priya (wife)" in wife.inner_text()
    replaced = page.locator("li.change.replaced")
    assert replaced.count() == 1
    assert replaced.locator(".key").inner_text() == "home"
    assert replaced.locator(".old-value").inner_text() == "Lisbon"
    assert replaced.locator(".new-value").inner_text() == "Madrid"
    page.screenshot(path=artifacts / f"user-{size}.png")
    page.screenshot(path=artifacts / f"user-{size}-full.png", full_page=True)
    assert fits_the_width(page)

    page.locator(f'tr.memory[data-id="{saved["madrid"]["id"]}"] a.history-link').click()
    page.wait_for_url(re.compile(rf"memory={saved['madrid']['id']}"))
    assert page.locator("#timeline-heading").inner_text() == "History of one memory"
    assert page.locator("li.change .kind").all_inner_texts() == ["created"]


def test_staff_erase_a_user_only_with_the_external_id_typed_again(browser_page, live_server):
    dana, _ = dana_with_memories()
    page = browser_page
    log_in(page, live_server, next_path=f"/review/users/{dana.id}")

    page.get_by_text("Erase this user…").click()
    page.get_by_label("Type ext-Dana-7 to confirm").fill("ext-dana-7")
    page.get_by_role("button", name="Erase", exact=True).click()
    page.wait_for_selector("ul.messages li.error")

    assert "Nothing was erased" in page.locator("ul.messages li.error").inner_text()
    assert User.objects.get(id=dana.id).erasure_started_at is None
    assert Memory.objects.filter(user=dana).count() == 8

    page.get_by_text("Erase this user…").click()
    page.get_by_label("Type ext-Dana-7 to confirm").fill("ext-Dana-7")
    page.get_by_role("button", name="Erase", exact=True).click()
    page.wait_for_url(re.compile(r"/review/users$"))

    assert "Erased “ext-Dana-7”" in page.locator("ul.messages li.success").inner_text()
    assert "ext-Dana-7" not in page.locator("table#users").inner_text()
    assert not User.objects.filter(id=dana.id).exists()
    assert not Memory.objects.filter(user_id=dana.id).exists()


def test_a_review_key_of_another_tenant_gets_404_for_the_users_page(browser_page, live_server):
    dana, _ = dana_with_memories()
    acme_key, _ = api_key_create(
        name="acme review", scopes=["review"], tenant=tenant_get_or_create(slug="acme")
    )
    # A review key's account has no password: its session is made here and handed to the
    # browser, as the admin login would have set it.
    client = Client()
    client.force_login(acme_key.account)
    page = browser_page
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )

    response = page.goto(f"{live_server.url}/review/users/{dana.id}")
    listed = page.goto(f"{live_server.url}/review/users")

    assert response is not None and response.status == 404
    assert listed is not None and listed.status == 200
    assert page.locator("tr.user-row").count() == 0
    assert Memory.objects.filter(user=dana, status=Status.ACTIVE).count() == 6
