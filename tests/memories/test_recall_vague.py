"""The labelled relevance set (tests/data/vague_questions.json: profiles with unrelated,
vague, paraphrased and other-language questions) through POST /api/memories and
GET /api/memories/search, with the real default model and settings. bench/vague.py measures
the same set over a grid of settings and reports its tuning and reporting parts apart
(docs/benchmarks.md, "Relevance").

The class bounds hold for the questions of issue 20's set; the phrasing bounds for the whole
set, with the questions issue 43 added (`added_in`: a model's tool call, a search box's word,
"the user", multi-need requests), as bench/vague_phrasings.py counts them."""

import json
from pathlib import Path

import pytest
from django.db import transaction

from tests.conftest import client_for, make_user

DATA = Path(__file__).resolve().parent.parent / "data" / "vague_questions.json"
CREATE_URL = "/api/memories"
SEARCH_URL = "/api/memories/search"
RELATED = ("vague", "paraphrase", "other_language")
# Bounds on the whole set that guard the trade-off chosen (docs/benchmarks.md has each part
# against issue 20's targets, 90% and 85% on the reporting part): questions no memory
# answers get nothing at least this often; of the memories that answer a related question,
# at least this share comes back. Measured on both databases, both parts: nothing for 89%,
# vague 85%, paraphrase 89%, other-language 93% kept ("what do you know about me" alone asks
# for eight memories, and "what are my hobbies" for every hobby). Issue 43 taught the question
# classifier a model's and a search box's phrasings: tool calls found 22% -> 100%, search-box
# words 49% -> 93%, and one more of these 120 questions about something never stored ("what
# is my wifi password") got an answer (85.0% -> 84.2%).
MIN_NOTHING_FOR_UNRELATED = 0.83
MIN_RELEVANT_KEPT = {"vague": 0.80, "paraphrase": 0.85, "other_language": 0.85}
# Per phrasing, on both parts (docs/benchmarks.md has each part against issue 43's targets):
# the share of answerable questions whose relevant memory is in the top 3, and of unrelated
# ones that get nothing. What both databases measured is in the comment of each.
MIN_IN_TOP_3 = {
    "first_person": 0.86,  # 89.4% (PostgreSQL), 89.9% (SQLite)
    "third_person": 0.88,  # 91.3%
    "tool_call": 0.95,  # 100%
    "search_box": 0.88,  # 92.7%
    "other_language": 0.77,  # 80.7% (SQLite), 81.5% (PostgreSQL)
}
MIN_NOTHING_BY_PHRASING = {
    "first_person": 0.80,  # 83.7%
    "third_person": 0.92,  # 96.2%
    "tool_call": 0.97,  # 100%
    "search_box": 0.93,  # 96.2%
    "other_language": 0.97,  # 100%
}

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


def test_the_data_set_has_every_class_in_both_parts_and_labels_only_own_memories():
    profiles = load_profiles()
    questions = [question for profile in profiles for question in profile["questions"]]

    assert len(profiles) >= 20 and len(questions) >= 300
    for part in ("tune", "report"):
        kinds = {q["kind"] for q in questions if q["part"] == part}
        assert kinds == {"unrelated", *RELATED, "multi_need"}, part
    for profile in profiles:
        keys = [memory["key"] for memory in profile["memories"]]
        assert len(set(keys)) == len(keys), profile["name"]
        for question in profile["questions"]:
            relevant, unrelated = set(question["relevant"]), set(question["unrelated"])
            assert relevant | unrelated <= set(keys), question
            assert not relevant & unrelated, question
            assert bool(relevant) == (question["kind"] != "unrelated"), question
            # A search returns at most ten: more relevant ones would be cut whatever the floor.
            assert len(relevant) <= 10, question


def of_issue_20(answers: list[dict]) -> list[dict]:
    return [answer for answer in answers if "added_in" not in answer]


def test_questions_no_memory_answers_mostly_get_nothing(answers):
    unrelated = [answer for answer in of_issue_20(answers) if answer["kind"] == "unrelated"]
    answered = [
        f"  {a['profile']}: {a['query']!r} -> {a['returned']}" for a in unrelated if a["returned"]
    ]
    share = 1 - len(answered) / len(unrelated)

    assert share >= MIN_NOTHING_FOR_UNRELATED, (
        f"nothing for {share:.1%} of {len(unrelated)}; answered:\n" + "\n".join(answered)
    )


@pytest.mark.parametrize("kind", RELATED)
def test_the_memories_a_related_question_is_about_mostly_come_back(answers, kind):
    related = [answer for answer in of_issue_20(answers) if answer["kind"] == kind]
    total = sum(len(answer["relevant"]) for answer in related)
    missed = [
        f"  {a['profile']}: {a['query']!r} missed {sorted(set(a['relevant']) - set(a['returned']))}"
        for a in related
        if set(a["relevant"]) - set(a["returned"])
    ]
    cut = sum(len(set(a["relevant"]) - set(a["returned"])) for a in related)
    share = 1 - cut / total

    assert share >= MIN_RELEVANT_KEPT[kind], f"kept {share:.1%} of {total}:\n" + "\n".join(missed)


@pytest.mark.parametrize("phrasing", MIN_IN_TOP_3)
def test_every_phrasing_finds_the_memory_a_question_is_about_in_the_top_3(answers, phrasing):
    asked = [
        a
        for a in answers
        if a["phrasing"] == phrasing and a["kind"] not in ("unrelated", "multi_need")
    ]
    missed = [
        f"  {a['profile']}: {a['query']!r} -> {a['returned'][:3]}, wanted {a['relevant']}"
        for a in asked
        if not set(a["relevant"]) & set(a["returned"][:3])
    ]
    share = 1 - len(missed) / len(asked)

    assert share >= MIN_IN_TOP_3[phrasing], f"{share:.1%} of {len(asked)}:\n" + "\n".join(missed)


@pytest.mark.parametrize("phrasing", MIN_NOTHING_BY_PHRASING)
def test_every_phrasing_of_an_unrelated_query_mostly_gets_nothing(answers, phrasing):
    asked = [a for a in answers if a["phrasing"] == phrasing and a["kind"] == "unrelated"]
    answered = [
        f"  {a['profile']}: {a['query']!r} -> {a['returned']}" for a in asked if a["returned"]
    ]
    share = 1 - len(answered) / len(asked)

    assert share >= MIN_NOTHING_BY_PHRASING[phrasing], (
        f"nothing for {share:.1%} of {len(asked)}:\n" + "\n".join(answered)
    )
