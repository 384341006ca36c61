"""Recall reads a query however a product phrases it (issue 43), through the API with the real
default embedder: a person's question, a backend's question about "the user", the phrase a
model writes when it calls memory_recall, and a search box's word. And it ranks what a
request needs above what is merely important; `min_relevance` on search and memory_recall.
The labelled set by phrasing is measured by `python -m bench vague` (docs/benchmarks.md)."""

import pytest

from memories.models import Memory
from memories.recall.addressed import to_the_assistant
from tests.memories.helpers import api_with_memories, assert_error, search_keys

SEARCH_URL = "/api/memories/search"
CONTEXT_URL = "/api/memories/context"
RECALL_TOOL_URL = "/api/tools/memory_recall"

PROFILE = [
    {"key": "music", "value": "Loves 1970s jazz fusion"},
    {"key": "home", "value": "Lives in Porto, near the river"},
    {"key": "job", "value": "Works as a veterinary nurse at an animal clinic"},
    {"key": "dogs", "value": "Has two dogs, Pip and Olive"},
    {"key": "wife", "value": "Married to Sofia, a civil engineer"},
    {"key": "diet", "value": "Vegetarian, and allergic to peanuts"},
    {"key": "commute", "value": "Cycles to work along the coast every morning"},
    {"key": "stack", "value": "Preferred backend stack is Django and PostgreSQL"},
]


@pytest.fixture
def api(db):
    return api_with_memories("phrasing", PROFILE)


@pytest.mark.parametrize(
    ("query", "key"),
    [("jazz", "music"), ("Porto", "home"), ("peanuts", "diet"), ("Django", "stack")],
)
def test_a_word_that_stands_in_a_memory_finds_it_from_a_search_box(api, query, key):
    assert search_keys(api, query)[:1] == [key]


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("Where does the user live?", "home"),
        ("What does the user do for work?", "job"),
        ("Does the user have any pets?", "dogs"),
        ("How should I plan a meal for the user?", "diet"),
    ],
)
def test_a_question_about_the_user_in_the_third_person_finds_its_memory(api, query, key):
    assert key in search_keys(api, query)[:3]


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("user occupation", "job"),
        ("user pets", "dogs"),
        ("user spouse", "wife"),
        ("user dietary restrictions", "diet"),
        ("user music taste", "music"),
    ],
)
def test_a_models_tool_call_phrase_finds_its_memory(api, query, key):
    assert key in search_keys(api, query)[:3]
    response = api.post(RECALL_TOOL_URL, {"query": query}, format="json")
    assert response.status_code == 200, response.content[:300]
    assert key in [hit["key"] for hit in response.json()["data"]][:3]


@pytest.mark.parametrize(
    "query", ["speed of light", "capital of peru", "user asks how tall Everest is", "7 x 8"]
)
def test_an_unrelated_query_gets_nothing_in_any_phrasing(api, query):
    assert search_keys(api, query) == []


def test_an_important_memory_does_not_outrank_a_clearly_relevant_one(api):
    Memory.objects.filter(key="stack").update(importance=1.0)
    Memory.objects.filter(key="diet").update(importance=0.0)

    response = api.get(SEARCH_URL, {"q": "are there foods I should avoid?"})

    results = response.json()["data"]
    assert results[0]["key"] == "diet", [(r["key"], r["score_parts"]) for r in results]
    for result in results:
        assert sum(result["score_parts"].values()) == pytest.approx(result["score"])


def test_min_relevance_zero_returns_the_top_k_whatever_the_gate_says(api):
    assert search_keys(api, "capital of peru") == []

    everything = search_keys(api, "capital of peru", min_relevance=0, top_k=5)
    assert len(everything) == 5
    assert len(search_keys(api, "capital of peru", min_relevance=0)) == len(PROFILE)

    response = api.post(
        RECALL_TOOL_URL, {"query": "capital of peru", "min_relevance": 0, "top_k": 3}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    assert len(response.json()["data"]) == 3


def test_min_relevance_keeps_the_results_whose_relevance_reaches_it(api):
    response = api.get(SEARCH_URL, {"q": "jazz", "min_relevance": 0.5})

    results = response.json()["data"]
    assert [result["key"] for result in results] == ["music"]
    # score_parts.relevance is the relevance weighted and scaled by the band: it reaches the
    # threshold times RECALL_WEIGHT_RELEVANCE and (1 - RECALL_ADJUSTMENT_BAND).
    assert results[0]["score_parts"]["relevance"] >= 0.5 * 0.55 * 0.85


@pytest.mark.parametrize("value", ["-0.1", "1.5", "lots"])
def test_min_relevance_outside_zero_to_one_is_a_400_naming_it(api, value):
    assert_error(api.get(SEARCH_URL, {"q": "jazz", "min_relevance": value}), 400, "min_relevance")
    response = api.post(RECALL_TOOL_URL, {"query": "jazz", "min_relevance": value}, format="json")
    assert_error(response, 400, "min_relevance")


def test_context_keeps_the_gate_and_holds_no_filler_lines(api):
    response = api.post(CONTEXT_URL, {"query": "what jazz do I like?"}, format="json")

    keys = [memory["key"] for memory in response.json()["memories"]]
    assert keys[:1] == ["music"]
    assert len(keys) < 5, keys
    assert api.post(CONTEXT_URL, {"query": "capital of peru"}, format="json").json() == {
        "hint": "",
        "memories": [],
        "profile": None,
    }


@pytest.mark.parametrize(
    "query",
    [
        # Phrasings of small talk that the labelled set does not hold.
        "what's your favourite book?",
        "who built you?",
        "are you human?",
        "do you like pizza?",
        "how's life?",
        "hey there!",
        "raconte-moi une blague",
        "The user says good morning.",
    ],
)
def test_small_talk_with_the_assistant_is_read_by_its_words(query):
    assert to_the_assistant(query) is not None


@pytest.mark.parametrize(
    "query",
    [
        "do you remember my diet?",
        "can you recommend a book for me?",
        "what should I cook tonight?",
        "hello, can you help me plan my trip?",
        "are you able to remember things?",
        "what's my name?",
    ],
)
def test_a_request_that_speaks_of_the_user_is_not_small_talk(query):
    assert to_the_assistant(query) is None


def test_what_small_talk_says_besides_itself_is_kept():
    assert to_the_assistant("Tell me a joke about penguins!") == "penguins!"


@pytest.mark.parametrize(
    "query", ["what's your favourite season?", "do you like rainy days?", "how's your day?"]
)
def test_small_talk_gets_nothing_however_close_to_a_memory(api, query):
    assert search_keys(api, query) == []
    hint = api.post(CONTEXT_URL, {"query": query}, format="json")
    assert hint.status_code == 200, hint.content[:300]
    assert hint.json()["memories"] == []


def test_small_talk_that_names_what_a_memory_holds_finds_it(api):
    assert search_keys(api, "tell me a joke about jazz")[:1] == ["music"]
