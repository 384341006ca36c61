"""explain=true on search and context (issue 48, item 2): the query's reading, and every memory
recall considered, returned or not, with its score parts, the gate's decision and the reason
in words. Through the API with the real default embedder; an explained call is no access."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory
from memories.recall import explain
from memories.recall.scoring import GATE_REASONS, Gate
from tests.memories.helpers import api_with_memories

SEARCH_URL = "/api/memories/search"
CONTEXT_URL = "/api/memories/context"

PROFILE = [
    {"key": "music", "value": "Loves 1970s jazz fusion"},
    {"key": "home", "value": "Lives in Porto, near the river"},
    {"key": "job", "value": "Works as a veterinary nurse at an animal clinic"},
    {"key": "dogs", "value": "Has two dogs, Pip and Olive"},
    {"key": "diet", "value": "Vegetarian, and allergic to peanuts"},
    {"key": "style", "value": "Prefers short answers", "pinned": True},
]


@pytest.fixture
def api(db):
    return api_with_memories("explained", PROFILE)


def _by_key(explanation: dict) -> dict[str, dict]:
    return {c["memory"]["key"]: c for c in explanation["candidates"]}


def test_an_unrelated_question_returns_nothing_and_says_why_of_each_candidate(api):
    body = api.get(SEARCH_URL, {"q": "Who wrote the Odyssey?", "explain": "true"}).json()

    assert body["data"] == []
    candidates = body["explanation"]["candidates"]
    assert len(candidates) >= 5
    for considered in candidates:
        assert considered["decision"] == "excluded"
        assert considered["gate"] in {Gate.FAR_NOT_ABOUT_USER, Gate.NO_WORDS}
        assert considered["reason"] == GATE_REASONS[Gate(considered["gate"])]
        # Scored all the same, so a reader sees how far it was.
        assert considered["score"] == pytest.approx(sum(considered["score_parts"].values()))
    reading = body["explanation"]["query"]
    assert reading["read"] == "Who wrote the Odyssey?" and reading["cut"] is False
    assert reading["language"] == "en"
    assert reading["about_user"] is False and reading["about_user_probability"] < 0.5


def test_the_returned_candidates_are_the_hits_with_the_same_score_parts(api):
    body = api.get(SEARCH_URL, {"q": "jazz", "explain": "true", "top_k": 1}).json()

    [hit] = body["data"]
    returned = [c for c in body["explanation"]["candidates"] if c["decision"] == "returned"]
    assert [c["memory"]["id"] for c in returned] == [hit["id"]]
    assert returned[0]["score_parts"] == hit["score_parts"]
    assert returned[0]["gate"] == Gate.WORDS
    assert returned[0]["reason"] == GATE_REASONS[Gate.WORDS]
    # Others the gate let in are below the top 1, or the gate left them out.
    for considered in body["explanation"]["candidates"][1:]:
        assert considered["decision"] == "excluded"
        assert "top 1" in considered["reason"] or not Gate(considered["gate"]).passed


def test_without_explain_the_answer_is_as_before(api):
    body = api.get(SEARCH_URL, {"q": "jazz"}).json()
    assert set(body) == {"data"}
    body = api.post(CONTEXT_URL, {"query": "jazz"}, format="json").json()
    assert "explanation" not in body


def test_an_explained_call_counts_as_no_access(api):
    api.get(SEARCH_URL, {"q": "jazz", "explain": "true"})
    api.post(CONTEXT_URL, {"query": "What music do I like?", "explain": True}, format="json")

    assert Memory.objects.get(key="music").access_count == 0
    api.get(SEARCH_URL, {"q": "jazz"})
    assert Memory.objects.get(key="music").access_count == 1


def test_min_relevance_names_the_threshold_a_candidate_missed(api):
    body = api.get(SEARCH_URL, {"q": "jazz", "explain": "true", "min_relevance": 0.5}).json()

    missed = [c for c in body["explanation"]["candidates"] if c["decision"] == "excluded"]
    assert missed
    assert all("below min_relevance 0.50" in c["reason"] and c["gate"] is None for c in missed)
    assert [h["key"] for h in body["data"]] == ["music"]


def test_context_explains_the_pinned_head_and_what_the_hint_left_out(api):
    body = api.post(
        CONTEXT_URL, {"query": "What should I cook tonight?", "explain": True}, format="json"
    ).json()

    by_key = _by_key(body["explanation"])
    assert by_key["style"]["decision"] == "returned"
    assert by_key["style"]["reason"] == explain.PINNED
    assert by_key["diet"]["decision"] == "returned"
    assert [m["key"] for m in body["memories"]][:2] == ["style", "diet"]
    used = {m["key"] for m in body["memories"]}
    for key, considered in by_key.items():
        assert (considered["decision"] == "returned") == (key in used), key


def test_an_expired_memory_is_listed_as_expired_and_never_returned(api):
    Memory.objects.filter(key="music").update(expires_at=timezone.now() - timedelta(minutes=1))

    body = api.get(SEARCH_URL, {"q": "jazz", "explain": "true"}).json()

    assert body["data"] == []
    [music] = [c for c in body["explanation"]["candidates"] if c["memory"]["key"] == "music"]
    assert music["decision"] == "excluded" and music["reason"].startswith("expired at ")
    assert music["similarity"] is not None


def test_a_long_message_shows_the_part_recall_read(api):
    message = "Some long preamble about the weather and the news. " * 60 + "Where do I live?"

    body = api.post(CONTEXT_URL, {"query": message, "explain": True}, format="json").json()

    reading = body["explanation"]["query"]
    assert reading["cut"] is True and reading["read"].endswith("Where do I live?")
    assert len(reading["read"]) < len(message)


def test_small_talk_is_read_as_such(api):
    body = api.get(SEARCH_URL, {"q": "what's your name?", "explain": "true"}).json()

    assert body["explanation"]["query"]["read_as"] == explain.SMALL_TALK


def test_another_language_is_detected(api):
    body = api.get(SEARCH_URL, {"q": "Welchen Sport mache ich gern?", "explain": "true"}).json()
    assert body["explanation"]["query"]["language"] == "de"


@pytest.mark.parametrize("value", ["maybe", "2"])
def test_explain_takes_a_boolean(api, value):
    response = api.get(SEARCH_URL, {"q": "jazz", "explain": value})
    assert response.status_code == 400
    assert "explain" in response.json()["fields"]
    response = api.post(CONTEXT_URL, {"query": "jazz", "explain": "yes"}, format="json")
    assert response.status_code == 400
    assert "explain" in response.json()["fields"]


@pytest.mark.parametrize(
    "query", ["dogs", "user occupation", "What should I cook tonight?", "Who wrote the Odyssey?"]
)
def test_the_returned_candidates_come_first_the_pinned_at_their_head(api, query):
    searched = api.get(SEARCH_URL, {"q": query, "explain": "true"}).json()["explanation"]
    hinted = api.post(CONTEXT_URL, {"query": query, "explain": True}, format="json").json()

    for candidates in (searched["candidates"], hinted["explanation"]["candidates"]):
        decisions = [c["decision"] for c in candidates]
        assert decisions == sorted(decisions, key=lambda d: d != "returned"), query
    # The hint's memories in the hint's order: the pinned one heads both.
    returned = [c for c in hinted["explanation"]["candidates"] if c["decision"] == "returned"]
    assert returned[0]["reason"] == explain.PINNED
    assert [c["memory"]["key"] for c in returned] == [m["key"] for m in hinted["memories"]]
