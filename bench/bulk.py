"""Bulk loading of synthetic memories for the latency runs, bypassing memory_create (one
transaction, revision and index call per memory would take far too long for 100,000).

Writes exactly the rows the services would: the Memory rows (bulk_create), the
MemoryEmbedding rows, and per database the search structures:
- SQLite: the vec0 table vec_memory_embeddings (memories/recall/vector_store/sqlite_vec.py)
  and the FTS5 table fts_memories (memories/recall/keyword.py), with the same columns and
  the same partition token;
- PostgreSQL: MemoryEmbedding.vector (pgvector) written by binary COPY, with the HNSW index
  dropped during the load and rebuilt after it (memories/recall/vector_store/pgvector.py
  create_index_sql); the keyword side is the generated tsvector column, filled by PostgreSQL;
  then VACUUM (ANALYZE), as autovacuum would soon after such a load.
No MemoryRevision rows are written: recall never reads them."""

import time

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from memories.models import Memory, MemoryEmbedding, Scope, Source, Status, User
from memories.recall import keyword
from memories.recall.keyword import FTS_TABLE, _partition_token
from memories.recall.vector_store import partition_key

CHUNK = 5000


def load(user: User, items: list[tuple[str, str]], vectors: np.ndarray, *, model: str) -> dict:
    """Insert user-scope memories (key, value) with their vectors. Returns timings."""
    partition = partition_key(scope=Scope.USER, user_id=user.id)
    dimensions = int(vectors.shape[1])
    started = time.perf_counter()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS memory_embedding_hnsw_{dimensions}")
    for start in range(0, len(items), CHUNK):
        chunk = items[start : start + CHUNK]
        chunk_vectors = vectors[start : start + CHUNK]
        memories = [
            Memory(
                scope=Scope.USER,
                user=user,
                key=key,
                value=value,
                source=Source.CONVERSATION,
                status=Status.ACTIVE,
            )
            for key, value in chunk
        ]
        with transaction.atomic():
            Memory.objects.bulk_create(memories, batch_size=1000)
            if connection.vendor == "postgresql":
                _pg_embeddings(memories, chunk_vectors, partition=partition, model=model)
            else:
                _sqlite_rows(memories, chunk_vectors, partition=partition, model=model)
    rows_seconds = time.perf_counter() - started

    started = time.perf_counter()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            from memories.recall.vector_store.pgvector import create_index_sql

            cursor.execute("SET maintenance_work_mem = '1GB'")
            cursor.execute(create_index_sql(dimensions))
            cursor.execute("RESET maintenance_work_mem")
            # What autovacuum would do minutes after such a load (the inserts cross its
            # threshold), done now so that it does not run during the timings: a table of
            # this size in service has long been vacuumed.
            cursor.execute("VACUUM (ANALYZE)")
        else:
            cursor.execute("ANALYZE")
    # The keyword search caches memory counts and statistics for minutes; a load of
    # thousands of rows at once is not what that cache is for.
    keyword.clear_statistics()
    index_seconds = time.perf_counter() - started
    return {
        "rows": len(items),
        "rows_seconds": round(rows_seconds, 1),
        "index_seconds": round(index_seconds, 1),
    }


def _sqlite_rows(memories, vectors, *, partition, model):
    from memories.recall.vector_store.sqlite_vec import TABLE

    MemoryEmbedding.objects.bulk_create(
        [
            MemoryEmbedding(
                memory=m,
                model=model,
                dimensions=vectors.shape[1],
                vector=None,
                partition=partition,
                status=m.status,
            )
            for m in memories
        ],
        batch_size=1000,
    )
    token = _partition_token(partition)
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {TABLE}(memory_id, partition, status, embedding) VALUES (%s, %s, %s, %s)",
            [
                (m.id.hex, partition, m.status, np.asarray(v, dtype=np.float32).tobytes())
                for m, v in zip(memories, vectors, strict=True)
            ],
        )
        cursor.executemany(
            f"INSERT INTO {FTS_TABLE}(part, text, memory_id, status) VALUES (%s, %s, %s, %s)",
            [(token, m.embedding_text, m.id.hex, m.status) for m in memories],
        )


def _pg_embeddings(memories, vectors, *, partition, model):
    from pgvector.psycopg.vector import register_vector_info
    from psycopg.types import TypeInfo

    table = MemoryEmbedding._meta.db_table
    now = timezone.now()
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg cursor under Django's wrapper
        # Binary vector dumpers on this cursor only; the connection keeps Django's adapters.
        register_vector_info(raw, TypeInfo.fetch(raw.connection, "vector"))
        with raw.copy(
            f"COPY {table} (memory_id, model, dimensions, vector, partition, status, created_at) "
            "FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(
                ["uuid", "varchar", "int4", "vector", "varchar", "varchar", "timestamptz"]
            )
            for m, v in zip(memories, vectors, strict=True):
                copy.write_row(
                    (
                        m.id,
                        model,
                        int(v.shape[0]),
                        np.asarray(v, dtype=np.float32),
                        partition,
                        m.status,
                        now,
                    )
                )
