"""sqlite-vec implementation: a vec0 virtual table partitioned by owner and scope carrier.
Searches for active memories outside a transaction go to an in-process mirror of the
partition (sqlite_mirror.py: the same exact search, several times faster); others to
sqlite-vec, which scans every vector of the partitions asked for. Every write also appends
to the mirrors' change log."""

import json
from collections.abc import Iterable, Sequence
from uuid import UUID

import numpy as np
import sqlite_vec
from django.db import connection

from memories.models import Memory, MemoryEmbedding, Status
from memories.recall.vector_store import sqlite_mirror
from memories.recall.vector_store.base import Neighbour, partition_of
from memories.recall.vector_store.sqlite_lookups import point_lookups
from memories.recall.vector_store.sqlite_mirror import ALL_PARTITIONS, log_changes, mirrors

TABLE = "vec_memory_embeddings"


def load_extension(dbapi_connection) -> None:
    """Load sqlite-vec into a raw sqlite3/pysqlite3 connection."""
    dbapi_connection.enable_load_extension(True)
    try:
        sqlite_vec.load(dbapi_connection)
    finally:
        dbapi_connection.enable_load_extension(False)


# vec0 stores a partition's vectors in chunks of this many, allocated whole: at its default
# (1024) every end user with a few memories took ~1.5 MB of 384 floats, 12 GB per million
# memories of light users. Chunks of 32 waste at most 31 slots a partition, and a heavy user's
# scan is no slower (the mirror searches it anyway).
CHUNK_SIZE = 32


def create_table_sql(dimensions: int) -> str:
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING vec0("
        "memory_id TEXT PRIMARY KEY, "
        "partition TEXT PARTITION KEY, "
        "status TEXT, "
        f"embedding FLOAT[{int(dimensions)}] distance_metric=cosine, "
        f"chunk_size={CHUNK_SIZE})"
    )


INSERT = f"INSERT INTO {TABLE}(memory_id, partition, status, embedding) VALUES (%s, %s, %s, %s)"


class SqliteVecStore:
    composes_sql = False

    def save(self, *, memory: Memory, vector: Sequence[float], model: str) -> None:
        partition = partition_of(memory)
        MemoryEmbedding.objects.update_or_create(
            memory=memory,
            defaults={
                "model": model,
                "dimensions": len(vector),
                "vector": None,
                "partition": partition,
                "status": memory.status,
            },
        )
        # vec0 has no upsert; delete and insert inside the caller's transaction.
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {TABLE} WHERE memory_id = %s", [memory.id.hex])
            cursor.execute(
                INSERT,
                [memory.id.hex, partition, memory.status, sqlite_vec.serialize_float32(vector)],
            )
            log_changes(cursor, [(partition, memory.id.hex)])

    def save_many(self, *, items, model: str) -> None:
        items = list(items)
        if not items:
            return
        MemoryEmbedding.objects.bulk_create(
            [
                MemoryEmbedding(
                    memory=memory,
                    model=model,
                    dimensions=len(vector),
                    vector=None,
                    partition=partition_of(memory),
                    status=memory.status,
                )
                for memory, vector in items
            ],
            batch_size=500,
        )
        with connection.cursor() as cursor:
            cursor.executemany(
                INSERT,
                [
                    [
                        memory.id.hex,
                        partition_of(memory),
                        memory.status,
                        sqlite_vec.serialize_float32(list(vector)),
                    ]
                    for memory, vector in items
                ],
            )
            log_changes(cursor, [(partition_of(memory), memory.id.hex) for memory, _ in items])

    def delete(self, *, memory_ids: Iterable[UUID]) -> None:
        ids = list(memory_ids)
        if not ids:
            return
        partitions = _partitions_of(ids)
        MemoryEmbedding.objects.filter(memory_id__in=ids).delete()
        with connection.cursor() as cursor:
            cursor.executemany(f"DELETE FROM {TABLE} WHERE memory_id = %s", [[i.hex] for i in ids])
            log_changes(cursor, partitions)

    def forget(self, *, memory_ids: Iterable[UUID], last: bool = True) -> None:
        # The change log names the memories and their partitions (which hold the owner's
        # ids): those rows go, and one row for all partitions makes every process's mirror
        # load anew, so none keeps the erased vectors. That row is written by the last call
        # only: a reload per batch would make every process reload every partition it
        # mirrors after each batch, and no one searches the hidden user's partitions
        # meanwhile (mirrors of other partitions keep their own log rows, so stay right).
        sqlite_mirror.forget(
            memory_ids=[memory_id.hex for memory_id in memory_ids], reload_all=last
        )

    def set_status(self, *, memory_ids: Iterable[UUID], status: str) -> None:
        memory_ids = list(memory_ids)
        MemoryEmbedding.objects.filter(memory_id__in=memory_ids).update(status=status)
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {TABLE} SET status = %s WHERE memory_id = %s",
                [[status, i.hex] for i in memory_ids],
            )
            log_changes(cursor, _partitions_of(memory_ids))

    def nearest(self, *, vector, partitions, k, status):
        if not partitions or k <= 0:
            return []
        if status == Status.ACTIVE and mirrors.usable():
            found = _mirrored(vector, partitions, lambda mirror, q: mirror.nearest(q, k))
            if found is not None:
                found.sort(key=lambda pair: pair[1])
                return [
                    Neighbour(UUID(hex=memory_id), distance) for memory_id, distance in found[:k]
                ]
        placeholders = ", ".join(["%s"] * len(partitions))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT memory_id, distance FROM {TABLE} "
                f"WHERE embedding MATCH %s AND k = %s AND partition IN ({placeholders}) "
                "AND status = %s ORDER BY distance",
                [sqlite_vec.serialize_float32(list(vector)), int(k), *partitions, status],
            )
            # vec0 keeps k per partition key: the k nearest of them all.
            rows = cursor.fetchall()[:k]
            return [Neighbour(UUID(hex=row[0]), float(row[1])) for row in rows]

    def nearest_few(self, *, vector, partitions, k, status):
        # Exact already (the mirror, or sqlite-vec's scan): nothing narrower to do.
        return self.nearest(vector=vector, partitions=partitions, k=k, status=status)

    def nearest_sql(self, *, vector, partitions, k, status):
        raise NotImplementedError("sqlite-vec searches are not composed into other statements")

    def distance_sql(self, *, vector, memory_id):
        raise NotImplementedError("sqlite-vec searches are not composed into other statements")

    def count(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {TABLE}")
            return cursor.fetchone()[0]

    def distances(self, *, vector, memory_ids, partitions=None):
        """Cosine distance from `vector` to each given memory's vector (those that have one).
        With `partitions`, active memories of those are read from their mirrors."""
        remaining = {memory_id.hex: memory_id for memory_id in memory_ids}
        found: list[Neighbour] = []
        if partitions and remaining and mirrors.usable():

            def lookup(mirror, query):
                return mirror.distances(query, list(remaining))

            for memory_id, distance in _mirrored(vector, partitions, lookup) or []:
                found.append(Neighbour(remaining.pop(memory_id), distance))
        query = sqlite_vec.serialize_float32(list(vector))
        rows = point_lookups(
            f"SELECT memory_id, vec_distance_cosine(embedding, %s) FROM {TABLE} "
            "WHERE memory_id = %s",
            [(query, memory_id) for memory_id in remaining],
        )
        found += [Neighbour(UUID(hex=memory_id), float(distance)) for memory_id, distance in rows]
        return found

    def vectors_of(self, *, memory_ids) -> dict:
        rows = point_lookups(
            f"SELECT memory_id, vec_to_json(embedding) FROM {TABLE} WHERE memory_id = %s",
            [(memory_id.hex,) for memory_id in memory_ids],
        )
        return {UUID(hex=memory_id): json.loads(vector) for memory_id, vector in rows}

    def prepare(self, *, dimensions: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT sql FROM sqlite_master WHERE name = '{TABLE}'")
            row = cursor.fetchone()
            if row and f"float[{int(dimensions)}]" not in row[0].lower():
                # vec0 columns have a fixed size: a new model size needs a new table.
                cursor.execute(f"DROP TABLE {TABLE}")
            cursor.execute(create_table_sql(dimensions))
            for statement in sqlite_mirror.create_changes_sql():
                cursor.execute(statement)
            # Every process's mirrors load their partitions anew.
            log_changes(cursor, [(ALL_PARTITIONS, None)])


def _mirrored(vector, partitions, search) -> list[tuple[str, float]] | None:
    """search(mirror, unit query) over the mirror of each partition, results added up; None
    when a partition has no mirror (too large for VECTOR_MIRROR_MB): then sqlite-vec answers."""
    query = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    if norm == 0:
        return None  # cosine distance is undefined; sqlite-vec says what it says
    query = query / norm
    found: list[tuple[str, float]] = []
    for partition in dict.fromkeys(partitions):
        with mirrors.searched(table=TABLE, partition=partition, dimensions=len(query)) as mirror:
            if mirror is None:
                return None
            found += search(mirror, query)
    return found


def _partitions_of(memory_ids) -> list[tuple[str, str]]:
    """(partition, memory id hex) of memories that have a vector, for the change log."""
    rows = MemoryEmbedding.objects.filter(memory_id__in=list(memory_ids)).values_list(
        "partition", "memory_id"
    )
    return [(partition, memory_id.hex) for partition, memory_id in rows]
