"""The recall playground on a user's review page (issue 48, item 2): a message in, the hint the
model would get, every memory recall considered with its score parts as a stacked bar, the
decision and its reason, and the query's reading. The page shows the API's own explanation:
its bars carry the very score parts POST /api/memories/context with explain=true gives."""

import pytest

from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
from memories.models import Memory, User
from memories.recall.explain import PINNED
from memories.recall.scoring import GATE_REASONS, Gate
from tests.conftest import client_for
from tests.review.html import page_of

PROFILE = [
    {"key": "music", "value": "Loves 1970s jazz fusion"},
    {"key": "home", "value": "Lives in Porto, near the river"},
    {"key": "dogs", "value": "Has two dogs, Pip and Olive"},
    {"key": "diet", "value": "Vegetarian, and allergic to peanuts"},
    {"key": "style", "value": "Prefers short answers", "pinned": True},
]


@pytest.fixture
def lena(db) -> User:
    user = User.objects.create_user(username="lena")
    api = client_for(user)
    for memory in PROFILE:
        assert api.post("/api/memories", memory, format="json").status_code == 201
    return user


def playground_page(client, user: User, message: str, **fields):
    query = {"recall-message": message, **{f"recall-{k}": v for k, v in fields.items()}}
    return page_of(client.get(f"/review/users/{user.id}", query))


def rows(page) -> dict[str, object]:
    table = page.find("table", id="playground-candidates")
    return {row.attrs["data-key"]: row for row in table.find_all("tr", cls="considered")}


def test_an_unrelated_message_gets_an_empty_hint_and_each_candidate_says_why(staff_client, lena):
    page = playground_page(staff_client, lena, "Who wrote the Odyssey?")

    # Only the pinned memory: it heads every hint.
    hint = page.find(id="playground-hint").text
    assert "Prefers short answers" in hint
    assert not any(word in hint for word in ("jazz", "Porto", "dogs", "Vegetarian"))
    shown = rows(page)
    assert {"music", "home", "dogs", "diet"} <= set(shown)
    excluded = [row for key, row in shown.items() if key != "style"]
    assert all(row.attrs["data-decision"] == "excluded" for row in excluded)
    reasons = {row.find(cls="reason").text for row in excluded}
    assert GATE_REASONS[Gate.FAR_NOT_ABOUT_USER] in reasons
    assert shown["style"].attrs["data-decision"] == "returned"
    assert PINNED in shown["style"].find(cls="reason").text
    reading = page.find("dl", id="playground-reading")
    assert "Who wrote the Odyssey?" in reading.find(cls="read").text
    assert "not read as about the user" in reading.find(cls="about-user").text


def test_the_bars_are_the_apis_score_parts(staff_client, lena):
    message = "What should I cook for dinner tonight?"
    page = playground_page(staff_client, lena, message)
    api = client_for(lena).post(
        "/api/memories/context", {"query": message, "explain": True}, format="json"
    )
    explained = {c["memory"]["key"]: c for c in api.json()["explanation"]["candidates"]}

    shown = rows(page)
    assert set(shown) == set(explained)
    for key, row in shown.items():
        expected = explained[key]
        assert row.attrs["data-decision"] == expected["decision"], key
        bars = {
            rect.attrs["data-part"]: float(rect.attrs["data-value"])
            for rect in row.find_all("rect")
        }
        parts = expected["score_parts"] or {}
        assert bars == pytest.approx({p: v for p, v in parts.items() if v > 0}), key
    assert shown["diet"].attrs["data-decision"] == "returned"
    assert "diet" in page.find(id="playground-hint").text or "Vegetarian" in page.find(
        id="playground-hint"
    ).text


def test_trying_the_playground_counts_as_no_access(staff_client, lena):
    playground_page(staff_client, lena, "What music do I like?")
    playground_page(staff_client, lena, "jazz")

    assert set(Memory.objects.filter(user=lena).values_list("access_count", flat=True)) == {0}


def test_without_a_message_the_page_shows_the_form_only(staff_client, lena):
    page = page_of(staff_client.get(f"/review/users/{lena.id}"))

    assert page.find("form", cls="playground-form")
    assert page.find_all("table", id="playground-candidates") == []


def test_a_topic_of_another_user_is_refused_by_the_form(staff_client, lena):
    other = User.objects.create_user(username="other")
    topic = other.topic_set.create(title="theirs")

    page = playground_page(staff_client, lena, "jazz", topic=str(topic.id))

    assert page.find_all("table", id="playground-candidates") == []
    assert "Select a valid choice" in page.find("form", cls="playground-form").text


def test_a_review_key_of_another_tenant_gets_404(db):
    owner_tenant = tenant_get_or_create(slug="acme")
    user = User.objects.create(username="acme-u", tenant=owner_tenant, external_id="u1")
    globex = tenant_get_or_create(slug="globex")
    key, _ = api_key_create(name="globex review", scopes=["review"], tenant=globex)
    from django.test import Client

    client = Client()
    client.force_login(key.account)

    response = client.get(f"/review/users/{user.id}", {"recall-message": "jazz"})

    assert response.status_code == 404


def test_as_of_recalls_what_was_current_then(staff_client, lena):
    from datetime import timedelta

    from django.utils import timezone

    before = timezone.now() - timedelta(minutes=5)
    Memory.objects.filter(user=lena).update(valid_from=before - timedelta(days=1))
    api = client_for(lena)
    api.post("/api/memories", {"key": "home", "value": "Lives in Madrid now"}, format="json")
    message = "Where do I live?"

    now_rows = rows(playground_page(staff_client, lena, message))
    then_rows = rows(
        playground_page(staff_client, lena, message, as_of=before.strftime("%Y-%m-%dT%H:%M"))
    )

    assert "Madrid" in now_rows["home"].text and "Porto" not in now_rows["home"].text
    assert "Porto" in then_rows["home"].text
