"""Writes that race: saves of one key at once, two imports of one file at once, and an edit
of the key racing an edit of the value. Real threads on the real database (both)."""

import json
import threading

import numpy as np
import pytest
from django.db import connection

from memories import saving, services
from memories.embeddings.embedders import get_embedder
from memories.models import Memory, Status
from memories.portability import importing
from memories.recall.vector_store import get_vector_store
from tests.conftest import client_for, make_user
from tests.memories.helpers import make_memory

pytestmark = pytest.mark.django_db(transaction=True)


def run_at_once(calls) -> list:
    """Run the calls in threads released together; their results in order. A thread's
    exception is re-raised here."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)
    errors: list = []

    def run(index, call):
        try:
            barrier.wait(timeout=30)
            results[index] = call()
        except Exception as exc:  # reported below; a thread cannot fail the test itself
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=pair) for pair in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def test_saves_of_one_key_at_once_leave_one_current_memory():
    user = make_user("racer")
    cities = ["Porto", "Braga", "Faro", "Évora"]
    for round_number in range(3):
        key = f"home {round_number}"
        answers = run_at_once(
            [
                lambda city=city, key=key: saving.memory_save_manual(
                    actor=user, scope="user", key=key, value=f"Lives in {city}"
                )
                for city in cities
            ]
        )

        rows = Memory.objects.filter(user=user, key=key)
        active = [m for m in rows if m.status == Status.ACTIVE]
        archived = [m for m in rows if m.status == Status.ARCHIVED]
        assert len(active) == 1 and len(archived) == len(cities) - 1
        assert all(m.superseded_by_id is not None and m.valid_until for m in archived)
        # Each write superseded exactly what was current when it held the key's lock.
        superseded = [i for answer in answers for i in answer.superseded_ids]
        assert sorted(superseded) == sorted(m.id for m in archived)


def test_saves_of_one_fact_at_once_write_one_row():
    user = make_user("twin")

    answers = run_at_once(
        [
            lambda: saving.memory_save_manual(
                actor=user, scope="user", key="tea", value="Likes green tea"
            )
            for _ in range(4)
        ]
    )

    assert Memory.objects.filter(user=user).count() == 1
    assert len({answer.memory.id for answer in answers}) == 1
    assert sum(answer.created for answer in answers) == 1


def test_the_same_rest_save_from_two_clients_at_once_answers_one_memory():
    user = make_user("clients")
    body = {"key": "editor", "value": "Uses Helix"}

    responses = run_at_once(
        [lambda: client_for(user).post("/api/memories", body, format="json") for _ in range(2)]
    )

    assert sorted(r.status_code for r in responses) == [200, 201]
    assert len({r.json()["id"] for r in responses}) == 1


def test_two_imports_of_one_file_at_once_write_each_fact_once(monkeypatch):
    # Small chunks, so the two imports interleave chunk by chunk.
    monkeypatch.setattr(importing, "IMPORT_CHUNK_LINES", 50)
    user = make_user("importer")
    lines = [
        importing.ImportLine(number=i + 1, key=f"fact {i}", value=f"Value number {i}")
        for i in range(300)
    ]

    results = run_at_once(
        [lambda: importing.memory_import(actor=user, lines=list(lines)) for _ in range(2)]
    )

    assert Memory.objects.filter(user=user).count() == 300
    assert sum(r.created for r in results) == 300
    assert sum(r.created + r.unchanged for r in results) == 600
    assert all(r.errors == [] for r in results)


def test_a_key_edit_racing_a_value_edit_leaves_the_vector_of_the_stored_text(monkeypatch):
    """The value edit embeds its text, then (before it locks the row) the key edit commits:
    the row the value edit writes holds the new key, so its first vector is stale and it
    must embed again."""
    user = make_user("editor")
    memory = make_memory(user, key="hobby", value="Plays the cello")
    real_embed_one = services.writes.embed_one
    interleaved = []

    def embed_then_let_the_key_edit_in(text):
        vector = real_embed_one(text)
        if not interleaved:
            interleaved.append(text)
            # The other request, committed between this edit's embedding and its lock.
            services.memory_update(
                memory=Memory.objects.get(id=memory.id),
                actor=user,
                changes={"key": "transport"},
            )
        return vector

    monkeypatch.setattr(services.writes, "embed_one", embed_then_let_the_key_edit_in)
    services.memory_update(
        memory=Memory.objects.get(id=memory.id),
        actor=user,
        changes={"value": "Rides an electric scooter"},
    )

    stored = Memory.objects.get(id=memory.id)
    assert interleaved == ["hobby: Rides an electric scooter"]
    assert stored.embedding_text == "transport: Rides an electric scooter"
    vector = get_vector_store().vectors_of(memory_ids=[memory.id])[memory.id]
    expected = get_embedder().embed([stored.embedding_text])[0]
    assert float(np.dot(vector, expected)) == pytest.approx(1.0, abs=1e-4)
    hits = client_for(user).get("/api/memories/search", {"q": "electric scooter"}).json()["data"]
    assert [hit["id"] for hit in hits] == [str(memory.id)]


def test_concurrent_restores_of_two_holders_of_a_key_leave_one_current():
    user = make_user("restorer")
    berlin = saving.memory_save_manual(actor=user, scope="user", key="home", value="Berlin")
    porto = saving.memory_save_manual(actor=user, scope="user", key="home", value="Porto")
    saving.memory_save_manual(actor=user, scope="user", key="home", value="Lisbon")

    run_at_once(
        [
            lambda memory_id=saved.memory.id: services.memory_restore(
                memory_id=memory_id, actor=user
            )
            for saved in (berlin, porto)
        ]
    )

    current = Memory.objects.filter(user=user, status=Status.ACTIVE, deleted_at__isnull=True)
    assert current.count() == 1
    assert json.dumps(sorted(m.value for m in current)) in ('["Berlin"]', '["Porto"]')


def test_edits_moving_two_memories_into_a_held_key_at_once_leave_one_current():
    user = make_user("mover")
    saving.memory_save_manual(actor=user, scope="user", key="home", value="Lives in Porto")
    movers = [
        saving.memory_save_manual(actor=user, scope="user", key=key, value=value).memory
        for key, value in (("city", "Lives in Lisbon"), ("town", "Lives in Faro"))
    ]

    run_at_once(
        [
            lambda memory=memory: services.memory_update(
                memory=memory, actor=user, changes={"key": "home"}
            )
            for memory in movers
        ]
    )

    current = Memory.objects.filter(
        user=user, key_normalised="home", status=Status.ACTIVE, deleted_at__isnull=True
    )
    assert current.count() == 1
    archived = Memory.objects.filter(user=user, status=Status.ARCHIVED)
    assert archived.count() == 2
    assert all(m.superseded_by_id is not None and m.valid_until for m in archived)
