"""The Server-Timing header (ops.timing): with SERVER_TIMING on, a search through a service
key says how long each stage took and how long Django spent in all; off, nothing is said."""

import pytest
from rest_framework.test import APIClient

from memories.accounts.keys import api_key_create
from memories.accounts.users import external_user_create
from ops import timing
from tests.memories.helpers import make_memory

SEARCH_STAGES = {
    "auth",
    "embedding",
    "keyword",
    "candidates",
    "scoring",
    "access_write",
    "serialize",
    "render",
    "app",
}


@pytest.fixture
def key_client(db) -> APIClient:
    user = external_user_create(external_id="ext-timed")
    make_memory(user, key="drink", value="Prefers green tea in the morning")
    make_memory(user, key="city", value="Lives in Lisbon")
    _, raw_key = api_key_create(name="timed backend", scopes=["read", "write"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}", HTTP_X_USER_ID="ext-timed")
    return client


def test_a_search_says_where_its_time_went(settings, key_client):
    settings.SERVER_TIMING = True

    response = key_client.get("/api/memories/search", {"q": "what tea do I drink?"})

    assert response.status_code == 200, response.content
    assert response.json()["data"][0]["key"] == "drink"
    stages = timing.parse_header(response["Server-Timing"])
    assert set(stages) == SEARCH_STAGES
    assert all(ms >= 0 for ms in stages.values())
    top_level = sum(ms for name, ms in stages.items() if name != "app")
    # Rounded to hundredths of a ms each.
    assert stages["app"] >= top_level - 0.01 * len(stages)


def test_an_error_answer_still_has_the_app_time(settings, key_client):
    settings.SERVER_TIMING = True

    response = key_client.get("/api/memories/search", {"q": ""})

    assert response.status_code == 400
    stages = timing.parse_header(response["Server-Timing"])
    assert "app" in stages and "auth" in stages and "embedding" not in stages


def test_no_header_unless_asked_for(key_client):
    response = key_client.get("/api/memories/search", {"q": "tea"})

    assert response.status_code == 200
    assert "Server-Timing" not in response


def test_stages_outside_a_request_are_not_recorded():
    with timing.stage("orphan"):
        pass
    timing.start_request()
    with timing.stage("auth"):
        pass
    with timing.stage("auth"):  # a stage entered twice adds up
        pass
    timing.record("scoring", 0.002)

    stages = timing.end_request()

    assert list(stages) == ["auth", "scoring"] and stages["scoring"] == 0.002
    assert timing.end_request() == {}


def test_the_header_value_round_trips():
    value = timing.header_value({"auth": 0.00041, "embedding": 0.0046}, app_seconds=0.0123)

    assert value == "auth;dur=0.41, embedding;dur=4.60, app;dur=12.30"
    assert timing.parse_header(value) == {"auth": 0.41, "embedding": 4.6, "app": 12.3}
    assert timing.parse_header('cache;desc="hit", db;dur=2') == {"db": 2.0}
    assert timing.parse_header("") == {}
