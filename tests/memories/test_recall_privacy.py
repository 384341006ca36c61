"""A user's search results and scores depend on their own memories only: another user who
writes the same words changes nothing, so scores cannot tell anyone what others stored."""

from unittest import mock

import pytest
from django.test import override_settings
from django.utils import timezone

from memories import saving
from memories.models import Memory
from tests.conftest import client_for, make_user
from tests.memories.helpers import make_memory

URL = "/api/memories/search"
QUERIES = [
    "which doctor do I see about my knee",
    "harbour walks with the dog",
    "what do I cook on sundays",
    "tell me about my family",
]
FACTS = [
    ("doctor", "My doctor is Dr Okafor at the harbour clinic"),
    ("knee", "Had knee surgery in March, physio twice a week"),
    ("dog", "Walks the dog Biscuit along the harbour every morning"),
    ("cooking", "Cooks a big lentil stew on Sundays"),
    ("sister", "My sister Ines lives in Porto"),
    ("daughter", "Has a daughter named Mia"),
    ("cello", "Plays the cello in an amateur orchestra"),
    ("doctor visit", "Next visit to the doctor is about the knee again"),
]
# Another user's memories made of the same words, in other proportions.
OTHERS = [
    "doctor harbour knee",
    "my doctor at the harbour said the knee is fine",
    "dog walks on sundays, the harbour and the doctor",
    "cook stew, harbour, family, sister, daughter",
]


def _searches(client, owner) -> list:
    """Every query's results with their scores and parts, at one instant and with the access
    counts as they were, so only what the index holds can differ between two calls."""
    answers = []
    with mock.patch("django.utils.timezone.now", return_value=NOW):
        for query in QUERIES:
            Memory.objects.filter(user=owner).update(access_count=0, last_accessed_at=None)
            response = client.get(URL, {"q": query, "top_k": 20})
            assert response.status_code == 200
            answers.append(
                [(r["id"], r["score"], r["score_parts"]) for r in response.json()["data"]]
            )
    return answers


NOW = timezone.now()


def _others_write(count: int) -> None:
    other = make_user("neighbour")
    items = [
        {"scope": "user", "key": f"note {i}", "value": OTHERS[i % len(OTHERS)] + f" {i}"}
        for i in range(count)
    ]
    saving.memory_save_manual_batch(actor=other, items=items)


def _owner_with_facts(copies: int = 1):
    owner = make_user("owner")
    for copy in range(copies):
        for key, value in FACTS:
            make_memory(owner, key=f"{key} {copy}" if copies > 1 else key, value=value)
    return owner


@pytest.mark.django_db
def test_a_users_results_and_score_parts_do_not_move_when_another_user_writes_their_words():
    owner = _owner_with_facts()
    client = client_for(owner)
    before = _searches(client, owner)

    _others_write(1000)

    assert _searches(client, owner) == before
    assert any(before), "the queries should find something"


@pytest.mark.django_db
@override_settings(RECALL_KEYWORD_ROW_BUDGET=10)
def test_nor_when_the_user_has_more_memories_than_the_keyword_row_budget():
    owner = _owner_with_facts(copies=3)  # 24 memories, "harbour" in 6 and "doctor" in 9
    client = client_for(owner)
    before = _searches(client, owner)

    _others_write(1000)

    assert _searches(client, owner) == before
    assert any(before)


@pytest.mark.django_db
def test_a_spy_cannot_read_a_victims_words_from_the_relevance_of_their_own_memories():
    spy, victim = make_user("spy"), make_user("victim")
    first = make_memory(spy, key="w1", value="Okafor harbour")
    make_memory(spy, key="w2", value="Lindqvist harbour")
    client = client_for(spy)

    def relevance_of_first():
        with mock.patch("django.utils.timezone.now", return_value=NOW):
            Memory.objects.filter(user=spy).update(access_count=0, last_accessed_at=None)
            results = client.get(URL, {"q": "Okafor Lindqvist"}).json()["data"]
        return [(r["id"], r["score_parts"]["relevance"]) for r in results]

    before = relevance_of_first()
    for _ in range(40):
        make_memory(victim, key="doctor", value="my doctor is dr Okafor")

    assert relevance_of_first() == before
    assert str(first.id) in [memory_id for memory_id, _ in before]
