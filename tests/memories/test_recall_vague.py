"""Vague, broad and paraphrased questions (tests/data/vague_questions.json) through
POST /api/memories and GET /api/memories/search, with the real local model and the default
settings: memories plainly about a question come back, unrelated ones stay out.
bench/vague.py measures the same data set over a grid of settings."""

import json
from pathlib import Path

import pytest
from django.db import transaction

from tests.conftest import client_for, make_user

DATA = Path(__file__).resolve().parent.parent / "data" / "vague_questions.json"
CREATE_URL = "/api/memories"
SEARCH_URL = "/api/memories/search"
# Measured with the default floors (docs/benchmarks.md, "Vague questions"): 15% of relevant
# memories cut and 8% of unrelated ones let in; with the single relevance floor before them,
# 81% and 1%. MiniLM's similarities of relevant and unrelated memories overlap, so no floor
# on them reaches 10% and 10% at once; these bounds guard the trade-off chosen.
MAX_CUT = 0.20
MAX_LET_IN = 0.10

# The mark makes pytest-django set up the test database, which the module fixture below uses;
# without it, a module asking only for django_db_setup would reach the development database.
pytestmark = pytest.mark.django_db


def load_profiles() -> list[dict]:
    return json.loads(DATA.read_text())


@pytest.fixture(scope="module")
def answers(django_db_setup, django_db_blocker) -> list[dict]:
    """Every question asked by its profile's user, with the keys the search returned. Each
    profile is loaded once for the whole module, in a transaction rolled back at the end, so
    nothing is left for the tests that follow."""
    answers = []
    with django_db_blocker.unblock(), transaction.atomic():
        for i, profile in enumerate(load_profiles()):
            api = client_for(make_user(f"vague-{i}"))
            for memory in profile["memories"]:
                response = api.post(CREATE_URL, memory, format="json")
                assert response.status_code == 201, response.content[:500]
            for question in profile["questions"]:
                response = api.get(SEARCH_URL, {"q": question["query"]})
                assert response.status_code == 200, response.content[:500]
                returned = [result["key"] for result in response.json()["data"]]
                answers.append({**question, "profile": profile["name"], "returned": returned})
        transaction.set_rollback(True)
    return answers


def rates(answers: list[dict]) -> tuple[float, float, str]:
    """The share of relevant memories cut, the share of unrelated ones let in, and a report
    of both with the questions that missed, for the failure message."""
    relevant = sum(len(answer["relevant"]) for answer in answers)
    unrelated = sum(len(answer["unrelated"]) for answer in answers)
    cut = let_in = 0
    misses = []
    for answer in answers:
        missing = [key for key in answer["relevant"] if key not in answer["returned"]]
        extra = [key for key in answer["unrelated"] if key in answer["returned"]]
        cut += len(missing)
        let_in += len(extra)
        if missing or extra:
            question = f"{answer['profile']}: {answer['query']!r}"
            misses.append(f"  {question}: cut {missing}, let in {extra}")
    report = (
        f"relevant cut {cut}/{relevant} = {cut / relevant:.1%} (at most {MAX_CUT:.0%}); "
        f"unrelated let in {let_in}/{unrelated} = {let_in / unrelated:.1%} "
        f"(at most {MAX_LET_IN:.0%})\n" + "\n".join(misses)
    )
    return cut / relevant, let_in / unrelated, report


def test_the_data_set_labels_only_each_profiles_own_memories():
    profiles = load_profiles()
    questions = [question for profile in profiles for question in profile["questions"]]

    assert len(profiles) >= 8 and len(questions) >= 50
    assert any(not question["relevant"] for question in questions)
    for profile in profiles:
        keys = [memory["key"] for memory in profile["memories"]]
        assert len(set(keys)) == len(keys), profile["name"]
        for question in profile["questions"]:
            relevant, unrelated = set(question["relevant"]), set(question["unrelated"])
            assert relevant | unrelated <= set(keys), question
            assert not relevant & unrelated, question
            # A search returns at most ten: more relevant ones would be cut whatever the floor.
            assert len(relevant) <= 10, question


def test_few_memories_plainly_about_a_question_are_cut(answers):
    cut, _, report = rates(answers)

    assert cut <= MAX_CUT, report


def test_few_unrelated_memories_get_in(answers):
    _, let_in, report = rates(answers)

    assert let_in <= MAX_LET_IN, report


def test_family_and_hobbies_brings_the_daughter_first_and_the_hobbies(answers):
    [answer] = [
        answer
        for answer in answers
        if answer["profile"] == "engineer and parent in Berlin"
        and answer["query"] == "tell me about my family and hobbies"
    ]

    # The example: no word matches, the daughter's similarity is 0.22. MiniLM puts
    # "Lives in Berlin" (0.16) above the cello (0.15), so no floor on similarity keeps the
    # hobbies out of reach of the city; what is far from the question stays out.
    assert answer["returned"][0] == "daughter", answer["returned"]
    assert {"cello", "bouldering"} <= set(answer["returned"]), answer["returned"]
    assert "allergy" not in answer["returned"], answer["returned"]
