"""The vector store of the current database backend (sqlite-vec or pgvector) round-trips."""

import pytest
from django.db import connection

from memories.embeddings.embedders import embed_one
from memories.models import MemoryEmbedding, Status
from memories.recall.vector_store import get_vector_store, partition_key, partition_of
from tests.memories.helpers import bulk_memories


def unit(index: int, dimensions: int = 384) -> list[float]:
    vector = [0.0] * dimensions
    vector[index] = 1.0
    return vector


def test_the_store_matches_the_database_backend(db):
    store = get_vector_store()

    expected = "PgVectorStore" if connection.vendor == "postgresql" else "SqliteVecStore"
    assert type(store).__name__ == expected


def test_a_vector_is_written_and_found_again_by_nearest_neighbour(owner):
    near, far = bulk_memories(owner, 2)
    store = get_vector_store()

    store.save(memory=near, vector=unit(0), model="test-model")
    store.save(memory=far, vector=unit(1), model="test-model")

    assert store.count() == 2
    neighbours = store.nearest(
        vector=[0.9, 0.1] + [0.0] * 382, partitions=[partition_of(near)], k=2, status="active"
    )
    assert [n.memory_id for n in neighbours] == [near.id, far.id]
    assert neighbours[0].distance < neighbours[1].distance
    exact = store.nearest(vector=unit(0), partitions=[partition_of(near)], k=1, status="active")
    assert [n.memory_id for n in exact] == [near.id]
    assert abs(exact[0].distance) < 1e-6
    assert abs(exact[0].similarity - 1.0) < 1e-6
    embedding = MemoryEmbedding.objects.get(memory=near)
    assert (embedding.model, embedding.dimensions) == ("test-model", 384)


def test_a_real_embedding_round_trips(owner):
    [memory] = bulk_memories(owner, 1)
    store = get_vector_store()

    store.save(memory=memory, vector=embed_one("Go with Gin"), model="all-MiniLM-L6-v2")

    [hit] = store.nearest(
        vector=embed_one("Go with Gin"), partitions=[partition_of(memory)], k=5, status="active"
    )
    assert hit.memory_id == memory.id
    assert hit.distance < 1e-4


def test_saving_again_replaces_the_vector(owner):
    [memory] = bulk_memories(owner, 1)
    store = get_vector_store()
    store.save(memory=memory, vector=unit(0), model="m")

    store.save(memory=memory, vector=unit(5), model="m")

    assert store.count() == 1
    [hit] = store.nearest(vector=unit(5), partitions=[partition_of(memory)], k=1, status="active")
    assert hit.distance < 1e-6


def test_nearest_stays_inside_the_given_partitions(owner, other):
    [mine] = bulk_memories(owner, 1)
    [theirs] = bulk_memories(other, 1)
    store = get_vector_store()
    store.save(memory=mine, vector=unit(0), model="m")
    store.save(memory=theirs, vector=unit(0), model="m")

    hits = store.nearest(
        vector=unit(0),
        partitions=[partition_key(scope="user", user_id=owner.id)],
        k=10,
        status="active",
    )

    assert [h.memory_id for h in hits] == [mine.id]
    assert store.nearest(vector=unit(0), partitions=[], k=10, status="active") == []


def test_nearest_filters_by_status_and_follows_status_changes(owner):
    [memory] = bulk_memories(owner, 1, status=Status.PENDING_REVIEW)
    store = get_vector_store()
    store.save(memory=memory, vector=unit(0), model="m")
    partitions = [partition_of(memory)]

    assert store.nearest(vector=unit(0), partitions=partitions, k=1, status="active") == []
    store.set_status(memory_ids=[memory.id], status=Status.ACTIVE)

    [hit] = store.nearest(vector=unit(0), partitions=partitions, k=1, status="active")
    assert hit.memory_id == memory.id
    assert store.nearest(vector=unit(0), partitions=partitions, k=1, status="pending_review") == []


def test_delete_removes_the_vector_and_the_embedding_row(owner):
    gone, kept = bulk_memories(owner, 2)
    store = get_vector_store()
    store.save(memory=gone, vector=unit(0), model="m")
    store.save(memory=kept, vector=unit(1), model="m")

    store.delete(memory_ids=[gone.id])

    assert store.count() == 1
    assert not MemoryEmbedding.objects.filter(memory=gone).exists()
    hits = store.nearest(vector=unit(0), partitions=[partition_of(gone)], k=5, status="active")
    assert [h.memory_id for h in hits] == [kept.id]


def test_postgresql_connections_search_the_hnsw_graph_as_wide_as_the_setting(db, settings):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL: hnsw.ef_search is pgvector's")
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.ef_search")
        [(ef_search,)] = cursor.fetchall()

    assert int(ef_search) == settings.RECALL_HNSW_EF_SEARCH
