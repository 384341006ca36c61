"""GET /api/memories/search: hybrid recall through the HTTP API, with the real local model."""

import pytest

from memories.models import Memory, Scope
from tests.conftest import client_for, make_user
from tests.memories.helpers import make_memory

URL = "/api/memories/search"

FACTS = [
    ("pet", "I have a golden retriever named Max"),
    ("job", "I work as a nurse at the city hospital"),
    ("food", "My favourite dish is spicy ramen"),
    ("sport", "I play tennis every Sunday morning"),
    ("backend", "Go with Gin framework for backend services"),
    ("travel", "Visited Kyoto last spring with my sister"),
]


@pytest.fixture
def facts(owner):
    return {key: make_memory(owner, key=key, value=value) for key, value in FACTS}


def test_a_paraphrased_question_finds_the_right_memory_first(api, facts):
    response = api.get(URL, {"q": "What kind of dog does the user own?"})

    assert response.status_code == 200
    results = response.json()["data"]
    assert results[0]["id"] == str(facts["pet"].id)


def test_another_paraphrase_finds_the_job(api, facts):
    results = api.get(URL, {"q": "what does she do for a living, which profession"}).json()["data"]

    assert results[0]["id"] == str(facts["job"].id)


def test_a_keyword_only_match_is_found(api, facts):
    # "Gin" as a bare word means little to the embedding model; the keyword half finds it.
    results = api.get(URL, {"q": "Gin"}).json()["data"]

    assert str(facts["backend"].id) in [r["id"] for r in results]
    assert results[0]["id"] == str(facts["backend"].id)


def test_each_result_carries_score_and_parts_that_sum_to_it(api, facts):
    results = api.get(URL, {"q": "tennis on sundays"}).json()["data"]

    assert results
    for result in results:
        parts = result["score_parts"]
        assert set(parts) == {
            "relevance",
            "entity",
            "importance",
            "recency",
            "frequency",
            "scope_bonus",
        }
        assert sum(parts.values()) == pytest.approx(result["score"])
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_top_k_defaults_to_ten_and_can_be_lowered(api, owner):
    for i in range(14):
        make_memory(owner, key=f"hobby {i}", value=f"Collects vintage stamps from country {i}")

    assert len(api.get(URL, {"q": "vintage stamps"}).json()["data"]) == 10
    assert len(api.get(URL, {"q": "vintage stamps", "top_k": 3}).json()["data"]) == 3


def test_an_important_but_unrelated_memory_never_outranks_or_comes_in_by_importance(api, owner):
    relevant = make_memory(owner, key="pet", value="I have a golden retriever named Max")
    make_memory(
        owner, key="allergy", value="Severe penicillin allergy", importance=1.0, confidence=1.0
    )
    Memory.objects.filter(key="allergy").update(access_count=1000)

    results = api.get(URL, {"q": "what dog breed do they have"}).json()["data"]

    # Read as a question about the user, it may let the allergy through the gate, never above
    # the dog: importance and popularity bring nothing in (the same results without them),
    # and the relevance part decides the order.
    assert results[0]["id"] == str(relevant.id)
    assert all(
        r["score_parts"]["relevance"] < results[0]["score_parts"]["relevance"] for r in results[1:]
    )
    Memory.objects.filter(key="allergy").update(importance=0.0, access_count=0)
    plain = api.get(URL, {"q": "what dog breed do they have"}).json()["data"]
    assert [r["id"] for r in plain] == [r["id"] for r in results]


def test_other_users_memories_are_never_candidates(api, owner, other, facts):
    secret = make_memory(other, key="pet", value="I have a golden retriever named Max")

    results = api.get(URL, {"q": "golden retriever Max"}).json()["data"]

    ids = [r["id"] for r in results]
    assert str(secret.id) not in ids
    assert ids[0] == str(facts["pet"].id)
    assert Memory.objects.get(id=secret.id).access_count == 0


@pytest.mark.parametrize(
    "params, field",
    [
        ({}, "q"),
        ({"q": ""}, "q"),
        ({"q": "x", "top_k": "lots"}, "top_k"),
        ({"q": "x", "top_k": 0}, "top_k"),
        ({"q": "x", "top_k": 51}, "top_k"),
        ({"q": "x", "topic_id": "nope"}, "topic_id"),
        ({"q": "x", "project_id": "00000000-0000-0000-0000-000000000000"}, "project_id"),
    ],
)
def test_it_rejects_bad_search_parameters(api, params, field):
    response = api.get(URL, params)

    assert response.status_code == 400
    assert field in response.json()["fields"]


def test_another_users_topic_is_refused(api, other):
    topic = client_for(other).post("/api/topics", {"title": "t"}, format="json").json()

    response = api.get(URL, {"q": "x", "topic_id": topic["id"]})

    assert response.status_code == 400
    assert "topic_id" in response.json()["fields"]


def test_search_needs_authentication(anon_api):
    assert anon_api.get(URL, {"q": "x"}).status_code == 401


def test_scope_bonus_puts_the_more_specific_scope_first(api, owner):
    project = api.post("/api/projects", {"name": "p"}, format="json").json()
    general = make_memory(owner, key="editor", value="Uses the vim editor for coding")
    specific = api.post(
        "/api/memories",
        {
            "scope": "project",
            "project_id": project["id"],
            "key": "editor",
            "value": "Uses the vim editor for coding",
        },
        format="json",
    ).json()

    results = api.get(URL, {"q": "which editor", "project_id": project["id"]}).json()["data"]

    assert [r["id"] for r in results] == [specific["id"], str(general.id)]
    # The project scope's bonus: 8% of the rest of its score.
    first = results[0]
    assert first["score_parts"]["scope_bonus"] == pytest.approx(
        0.08 * (first["score"] - first["score_parts"]["scope_bonus"])
    )
    assert results[1]["score_parts"]["scope_bonus"] == 0.0
    assert results[0]["scope"] == Scope.PROJECT


def test_staff_see_only_their_own_memories_in_search_too(owner):
    admin = make_user("admin2", is_staff=True)
    make_memory(owner, key="pet", value="I have a golden retriever named Max")

    results = client_for(admin).get(URL, {"q": "golden retriever"}).json()["data"]

    assert results == []
