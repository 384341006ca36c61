"""The extraction endpoints call a paid model: each user gets EXTRACTION_THROTTLE_RATE
requests of them together, and beyond it a 429 with Retry-After in the API's error shape."""

import pytest
from rest_framework.throttling import ScopedRateThrottle

from extraction.models import ExtractionRun
from tests.extraction.helpers import extract, extract_work, new_topic, new_work_session
from tests.memories.helpers import assert_error

RATE = 3


@pytest.fixture(autouse=True)
def small_rate(monkeypatch, no_llm):
    # DRF reads its rates into the throttle class once, at import.
    monkeypatch.setitem(ScopedRateThrottle.THROTTLE_RATES, "extraction", f"{RATE}/minute")


def assert_throttled(response):
    error = assert_error(response, 429)
    assert error["code"] == "throttled"
    assert 0 < int(response["Retry-After"]) <= 60


def test_a_user_past_the_rate_gets_429_with_retry_after(api, owner):
    topic_id = new_topic(api)
    for _ in range(RATE):
        assert extract(api, topic_id).status_code == 202

    assert_throttled(extract(api, topic_id))


def test_both_extraction_endpoints_draw_on_one_budget(api, owner):
    topic_id, session_id = new_topic(api), new_work_session(api)
    for _ in range(RATE - 1):
        assert extract(api, topic_id).status_code == 202
    assert extract_work(api, session_id).status_code == 202

    assert_throttled(extract_work(api, session_id))
    assert_throttled(extract(api, topic_id))


def test_a_throttled_request_starts_no_extraction(api, owner):
    topic_id = new_topic(api)
    for _ in range(RATE):
        extract(api, topic_id)
    runs = ExtractionRun.objects.count()

    assert_throttled(extract(api, topic_id))

    assert ExtractionRun.objects.count() == runs


def test_the_rate_is_per_user(api, other_api, owner, other):
    topic_id = new_topic(api)
    for _ in range(RATE):
        extract(api, topic_id)
    assert_throttled(extract(api, topic_id))

    assert extract(other_api, new_topic(other_api)).status_code == 202


def test_other_endpoints_are_not_throttled(api, owner):
    topic_id = new_topic(api)
    for _ in range(RATE):
        extract(api, topic_id)

    assert api.get(f"/api/topics/{topic_id}").status_code == 200
    assert api.get("/api/extraction-runs").status_code == 200
