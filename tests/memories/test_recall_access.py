"""Recall side effects: every hit adds exactly one access and refreshes its time."""

import threading

import pytest
from django.db import connection

from memories.accounts.tenants import default_tenant
from memories.models import Memory, Persona, Scope
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


def test_a_shared_persona_memory_keeps_its_statistics_whoever_recalls_it(owner):
    """Every user of a persona reads its persona-scope memories: if recall moved their
    access_count, one user would see in it what the others ask about."""
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    shared = make_memory(
        owner,
        scope=Scope.PERSONA,
        persona=persona,
        key="teaching style",
        value="Explains with golden retriever examples",
    )
    own = make_memory(owner, key="pet", value="I have a golden retriever named Max")
    other = client_for(make_user("other"))

    searched = other.get(URL, {"q": "golden retriever", "persona_id": str(persona.id)})
    client_for(owner).post(
        "/api/memories/context",
        {"query": "golden retriever", "persona_id": str(persona.id)},
        format="json",
    )
    seen = client_for(owner).get(URL, {"q": "golden retriever", "persona_id": str(persona.id)})

    assert searched.json()["data"][0]["id"] == str(shared.id)  # recalled, and returned whole
    results = {r["id"]: r for r in seen.json()["data"]}
    assert results[str(shared.id)]["access_count"] == 0
    assert results[str(shared.id)]["last_accessed_at"] is None
    assert results[str(own.id)]["access_count"] == 2  # the owner's own memory still counts
    shared.refresh_from_db()
    assert (shared.access_count, shared.last_accessed_at) == (0, None)
