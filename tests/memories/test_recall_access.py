"""Recall side effects: every hit adds exactly one access and refreshes its time."""

import threading

import pytest
from django.db import connection

from memories.models import Memory
from tests.conftest import client_for, make_user
from tests.memories.helpers import make_memory

URL = "/api/memories/search"


def test_each_hit_adds_exactly_one_access_and_sets_the_time(api, owner):
    hit = make_memory(owner, key="pet", value="I have a golden retriever named Max")
    miss = make_memory(owner, key="tax", value="Files taxes with an accountant in April")

    first = api.get(URL, {"q": "golden retriever"}).json()["data"]
    api.get(URL, {"q": "golden retriever"})

    hit.refresh_from_db()
    miss.refresh_from_db()
    assert [r["id"] for r in first] == [str(hit.id)]
    assert first[0]["access_count"] == 1
    assert hit.access_count == 2
    assert hit.last_accessed_at is not None
    assert miss.access_count == 0
    assert miss.last_accessed_at is None


def test_the_context_endpoint_counts_only_memories_in_the_hint(api, owner):
    memory = make_memory(owner, key="pet", value="I have a golden retriever named Max")

    api.post("/api/memories/context", {"query": "what dog"}, format="json")

    memory.refresh_from_db()
    assert memory.access_count == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_searches_lose_no_access_count():
    user = make_user("concurrent")
    memory = make_memory(user, key="pet", value="I have a golden retriever named Max")
    rounds, threads_count = 3, 4
    errors: list = []

    def search():
        try:
            client = client_for(user)
            for _ in range(rounds):
                response = client.get(URL, {"q": "golden retriever"})
                assert response.status_code == 200, response.content
                assert response.json()["data"][0]["id"] == str(memory.id)
        except Exception as exc:  # reported below; a thread cannot fail the test itself
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=search) for _ in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert Memory.objects.get(id=memory.id).access_count == rounds * threads_count
