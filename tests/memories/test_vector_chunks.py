"""SQLite: sqlite-vec allocates a partition's vectors in whole chunks. With many end users of
few memories each, the chunk size decides the database's size (issue 26): at vec0's default
of 1,024 slots, 12 GB per million memories of light users."""

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
from django.db import connection

from memories.models import Memory, Status, User
from memories.recall.vector_store import get_vector_store, partition_of
from memories.recall.vector_store.sqlite_vec import CHUNK_SIZE, TABLE

pytestmark = pytest.mark.skipif("os.environ.get('DATABASE_URL', '').startswith('postgres')")
DIMENSIONS = 384
USERS = 30
EACH = 3


def light_users(count: int, each: int) -> list[Memory]:
    rng = np.random.default_rng(4)
    memories = []
    for u in range(count):
        owner = User.objects.create_user(username=f"light-{u}")
        memories += Memory.objects.bulk_create(
            Memory(user=owner, key=f"k{i}", value=f"v{i}") for i in range(each)
        )
    vectors = rng.normal(size=(len(memories), DIMENSIONS)).astype(np.float32)
    get_vector_store().save_many(items=list(zip(memories, vectors, strict=True)), model="m")
    return memories


def vector_bytes_allocated() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT sum(length(vectors)) FROM {TABLE}_vector_chunks00")
        return int(cursor.fetchone()[0])


def table_sql() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [TABLE])
        return cursor.fetchone()[0]


def test_a_light_user_takes_one_small_chunk_not_a_thousand_slots(db):
    light_users(USERS, EACH)

    allocated = vector_bytes_allocated()

    one_chunk = CHUNK_SIZE * DIMENSIONS * 4
    assert allocated == USERS * one_chunk
    assert allocated * 10 < USERS * 1024 * DIMENSIONS * 4  # vec0's default chunk


def test_the_migration_rebuilds_a_table_of_large_chunks_keeping_every_vector(db):
    memories = light_users(4, EACH)
    store = get_vector_store()
    before = store.vectors_of(memory_ids=[m.id for m in memories])
    with connection.cursor() as cursor:  # the table as an older installation made it
        cursor.execute(f"CREATE TABLE old_rows AS SELECT * FROM {TABLE}")
        cursor.execute(f"DROP TABLE {TABLE}")
        cursor.execute(
            f"CREATE VIRTUAL TABLE {TABLE} USING vec0(memory_id TEXT PRIMARY KEY, "
            "partition TEXT PARTITION KEY, status TEXT, "
            f"embedding FLOAT[{DIMENSIONS}] distance_metric=cosine)"
        )
        cursor.execute(f"INSERT INTO {TABLE} SELECT * FROM old_rows")
        cursor.execute("DROP TABLE old_rows")
    assert "chunk_size" not in table_sql()
    assert vector_bytes_allocated() == 4 * 1024 * DIMENSIONS * 4

    migration = importlib.import_module("memories.migrations.0017_vector_chunks")
    # Inside the test's transaction, where SQLite's schema editor cannot open: the step
    # uses only its connection.
    migration.rebuild(None, SimpleNamespace(connection=connection))

    assert f"chunk_size={CHUNK_SIZE}" in table_sql()
    assert vector_bytes_allocated() == 4 * CHUNK_SIZE * DIMENSIONS * 4
    after = store.vectors_of(memory_ids=[m.id for m in memories])
    assert after.keys() == before.keys()
    for memory_id, vector in before.items():
        assert np.allclose(after[memory_id], vector)
    first = memories[0]
    [nearest, *_] = store.nearest(
        vector=before[first.id], partitions=[partition_of(first)], k=3, status=Status.ACTIVE
    )
    assert nearest.memory_id == first.id
