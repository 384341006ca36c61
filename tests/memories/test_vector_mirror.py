"""SQLite's in-process vector mirror (memories/recall/vector_store/sqlite_mirror.py): outside
a transaction, searches of active memories are answered from it; it must give sqlite-vec's
exact answer and follow every write, including those of other processes and rolled-back ones.
These tests commit (transaction=True): inside a test transaction the mirror is not used."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.db import connection, transaction

from memories.models import Memory, Status, User
from memories.recall.vector_store import get_vector_store, partition_of
from memories.recall.vector_store.sqlite_mirror import CHANGES, mirrors

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("os.environ.get('DATABASE_URL', '').startswith('postgres')"),
]
ROOT = Path(__file__).resolve().parents[2]
DIMENSIONS = 384


@pytest.fixture(autouse=True)
def _fresh_mirrors():
    mirrors.clear()
    yield
    mirrors.clear()


@pytest.fixture
def user(db):
    return User.objects.create_user(username="mirrored")


def random_vectors(count: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(count, DIMENSIONS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def with_vectors(user: User, vectors: np.ndarray, **kwargs) -> list[Memory]:
    memories = Memory.objects.bulk_create(
        Memory(user=user, key=f"key {i}", value=f"value {i}", **kwargs) for i in range(len(vectors))
    )
    get_vector_store().save_many(items=list(zip(memories, vectors, strict=True)), model="m")
    return memories


def nearest(memory: Memory, vector, k: int = 10) -> list:
    return get_vector_store().nearest(
        vector=list(vector), partitions=[partition_of(memory)], k=k, status=Status.ACTIVE
    )


def scanned(memory: Memory, vector, k: int = 10) -> list:
    """sqlite-vec's own answer: inside a transaction the store does not use the mirror."""
    with transaction.atomic():
        return nearest(memory, vector, k)


def mirrored_partitions() -> list[str]:
    return [partition for _, partition in mirrors._mirrors]


def test_the_mirror_gives_sqlite_vecs_exact_answer(user):
    memories = with_vectors(user, random_vectors(500))
    queries = random_vectors(20, seed=1)

    for query in queries:
        fast, exact = nearest(memories[0], query, k=50), scanned(memories[0], query, k=50)
        assert [hit.memory_id for hit in fast] == [hit.memory_id for hit in exact]
        assert np.allclose([h.distance for h in fast], [h.distance for h in exact], atol=1e-5)
    assert mirrored_partitions() == [partition_of(memories[0])]


def test_distances_of_keyword_hits_come_from_the_mirror_and_match_sqlite_vec(user):
    memories = with_vectors(user, random_vectors(50))
    store = get_vector_store()
    query = list(random_vectors(1, seed=2)[0])
    ids = [memory.id for memory in memories[:5]]
    partitions = [partition_of(memories[0])]

    fast = store.distances(vector=query, memory_ids=ids, partitions=partitions)
    with transaction.atomic():
        exact = store.distances(vector=query, memory_ids=ids)

    assert mirrored_partitions() == partitions
    assert {h.memory_id: round(h.distance, 5) for h in fast} == {
        h.memory_id: round(h.distance, 5) for h in exact
    }


def test_the_mirror_follows_creates_edits_status_changes_and_deletes(user):
    store = get_vector_store()
    vectors = random_vectors(4)
    first, second = with_vectors(user, vectors[:2])
    assert [h.memory_id for h in nearest(first, vectors[0], k=1)] == [first.id]

    [third] = with_vectors(user, vectors[2:3])
    assert [h.memory_id for h in nearest(first, vectors[2], k=1)] == [third.id]

    store.save(memory=second, vector=list(vectors[3]), model="m")  # an edit: a new vector
    assert [h.memory_id for h in nearest(first, vectors[3], k=1)] == [second.id]

    store.set_status(memory_ids=[third.id], status=Status.ARCHIVED)
    assert third.id not in [h.memory_id for h in nearest(first, vectors[2], k=10)]
    store.set_status(memory_ids=[third.id], status=Status.ACTIVE)
    assert [h.memory_id for h in nearest(first, vectors[2], k=1)] == [third.id]

    store.delete(memory_ids=[first.id])
    assert first.id not in [h.memory_id for h in nearest(second, vectors[0], k=10)]
    assert sorted(h.memory_id for h in nearest(second, vectors[0], k=10)) == sorted(
        [second.id, third.id]
    )


def test_a_write_of_another_process_is_seen_by_the_next_search(user):
    vectors = random_vectors(3)
    kept, gone = with_vectors(user, vectors[:2])
    assert len(nearest(kept, vectors[0])) == 2  # the mirror is loaded now

    # Another process (as another gunicorn worker would) adds one memory and deletes one.
    script = (
        "import django, json, sys; django.setup();"
        "from memories.models import Memory, User;"
        "from memories.recall.vector_store import get_vector_store;"
        "args = json.loads(sys.argv[1]); user = User.objects.get(pk=args['user']);"
        "new = Memory.objects.create(user=user, key='new', value='from elsewhere');"
        "store = get_vector_store();"
        "store.save(memory=new, vector=args['vector'], model='m');"
        "store.delete(memory_ids=[Memory.objects.get(pk=args['gone']).pk]);"
        "print(new.pk.hex)"
    )
    arguments = json.dumps(
        {"user": str(user.pk), "gone": str(gone.pk), "vector": vectors[2].tolist()}
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    new_id = done.stdout.strip().splitlines()[-1]

    hits = nearest(kept, vectors[2])
    assert [h.memory_id.hex for h in hits][:1] == [new_id]
    assert gone.id not in [h.memory_id for h in hits]
    assert len(hits) == 2


def test_a_rolled_back_write_never_reaches_the_mirror(user):
    vectors = random_vectors(2)
    [kept] = with_vectors(user, vectors[:1])
    nearest(kept, vectors[0])

    with pytest.raises(RuntimeError), transaction.atomic():
        with_vectors(user, vectors[1:2])
        # Searches inside the transaction see its own write, from sqlite-vec.
        assert len(nearest(kept, vectors[1])) == 2
        raise RuntimeError("roll back")

    assert [h.memory_id for h in nearest(kept, vectors[1])] == [kept.id]


def test_a_change_log_row_given_again_after_a_rollback_makes_the_mirror_reload(user):
    vectors = random_vectors(3)
    first, second = with_vectors(user, vectors[:2])
    assert len(nearest(first, vectors[0])) == 2
    # As if the last write the mirror took in had rolled back and its seq been given to
    # another memory since: the mirror cannot tell what changed and must load anew.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT max(seq) FROM {CHANGES}")
        [last_seq] = cursor.fetchone()
        cursor.execute(f"UPDATE {CHANGES} SET memory_id = 'rolled-back' WHERE seq = %s", [last_seq])
        # The vector of `second` changes without a log row the mirror could apply.
        cursor.execute(
            "UPDATE vec_memory_embeddings SET embedding = %s WHERE memory_id = %s",
            [vectors[2].tobytes(), second.id.hex],
        )

    [hit] = nearest(first, vectors[2], k=1)
    assert hit.memory_id == second.id
    assert hit.distance < 1e-5


def test_prepare_makes_every_mirror_reload(user):
    vectors = random_vectors(2)
    [memory] = with_vectors(user, vectors[:1])
    nearest(memory, vectors[0])
    with connection.cursor() as cursor:  # a change the log does not tell of
        cursor.execute(
            "UPDATE vec_memory_embeddings SET embedding = %s WHERE memory_id = %s",
            [vectors[1].tobytes(), memory.id.hex],
        )

    get_vector_store().prepare(dimensions=DIMENSIONS)

    [hit] = nearest(memory, vectors[1], k=1)
    assert hit.distance < 1e-5


def test_a_partition_larger_than_the_budget_is_searched_by_sqlite_vec(user, settings):
    settings.VECTOR_MIRROR_MB = 1  # 1 MB holds 682 vectors of 384 floats
    memories = with_vectors(user, random_vectors(700))
    query = random_vectors(1, seed=3)[0]

    fast = nearest(memories[0], query, k=20)

    assert mirrored_partitions() == []
    assert list(mirrors._too_large) == [
        (connection.settings_dict["NAME"], partition_of(memories[0]))
    ]
    assert [h.memory_id for h in fast] == [h.memory_id for h in scanned(memories[0], query, 20)]
    # Known to be too large: the next search goes straight to sqlite-vec, nothing loaded.
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {CHANGES}")
    assert len(nearest(memories[0], query, k=20)) == 20
    assert mirrored_partitions() == []


def test_a_mirror_that_grows_past_the_budget_is_dropped(user, settings):
    settings.VECTOR_MIRROR_MB = 1
    memories = with_vectors(user, random_vectors(600))
    assert len(nearest(memories[0], random_vectors(1)[0])) == 10
    assert mirrored_partitions() == [partition_of(memories[0])]

    with_vectors(user, random_vectors(100, seed=7))

    assert len(nearest(memories[0], random_vectors(1)[0])) == 10
    assert mirrored_partitions() == []


def test_the_least_recently_searched_partition_goes_first_when_over_budget(user, settings):
    settings.VECTOR_MIRROR_MB = 1
    other = User.objects.create_user(username="other mirrored")
    [mine] = with_vectors(user, random_vectors(400))[:1]
    [theirs] = with_vectors(other, random_vectors(400, seed=5))[:1]

    nearest(mine, random_vectors(1)[0])
    nearest(theirs, random_vectors(1)[0])

    assert mirrored_partitions() == [partition_of(theirs)]


def test_with_the_mirror_off_searches_go_to_sqlite_vec(user, settings):
    settings.VECTOR_MIRROR_MB = 0
    memories = with_vectors(user, random_vectors(30))

    hits = nearest(memories[0], random_vectors(1, seed=4)[0])

    assert len(hits) == 10
    assert mirrored_partitions() == []


def test_a_light_users_partition_is_read_by_its_ids_not_by_a_scan_of_every_user(user):
    """vec0 answers a query on its partition column by scanning every stored vector (a
    quarter of a second at 100,000): a partition small next to the table, a light user's, is
    loaded by point lookups of its memories, and holds exactly its own active vectors."""
    heavy = with_vectors(user, random_vectors(300))
    light_user = User.objects.create_user(username="light")
    light = with_vectors(light_user, random_vectors(6, seed=3))
    get_vector_store().set_status(memory_ids=[light[5].id], status=Status.ARCHIVED)
    statements: list[str] = []
    connection.ensure_connection()
    connection.connection.set_trace_callback(statements.append)
    try:
        found = nearest(light[0], random_vectors(1, seed=3)[0], k=10)
    finally:
        connection.connection.set_trace_callback(None)

    assert {hit.memory_id for hit in found} == {memory.id for memory in light[:5]}
    vec_reads = [s for s in statements if "FROM vec_memory_embeddings" in s]
    assert vec_reads and all("WHERE memory_id =" in s for s in vec_reads), vec_reads
    # The heavy user's partition, most of the table, is still read in one scan.
    statements.clear()
    connection.connection.set_trace_callback(statements.append)
    try:
        assert len(nearest(heavy[0], random_vectors(1, seed=4)[0], k=10)) == 10
    finally:
        connection.connection.set_trace_callback(None)
    assert any("WHERE partition =" in s for s in statements if "vec_memory_embeddings" in s)
