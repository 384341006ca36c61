"""pgvector implementation: the vector column of MemoryEmbedding (any model's vectors), searched
per partition: by an exact scan of its rows (B-tree on partition), or where the partition is
large, by its own HNSW graph (partition_indexes: partial expression indexes per partition
and dimensions)."""

from collections.abc import Iterable, Sequence
from uuid import UUID

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from pgvector import Vector

from memories.models import Memory, MemoryEmbedding
from memories.recall.vector_store.base import Neighbour, partition_of

# By name: the tasks module imports the erasure that calls into this store.
INDEX_PARTITIONS_TASK = "memories.tasks.index_partitions_task"

TABLE = MemoryEmbedding._meta.db_table


class PgVectorStore:
    composes_sql = True

    def save(self, *, memory: Memory, vector: Sequence[float], model: str) -> None:
        MemoryEmbedding.objects.update_or_create(
            memory=memory,
            defaults={
                "model": model,
                "dimensions": len(vector),
                "vector": list(vector),
                "partition": partition_of(memory),
                "status": memory.status,
            },
        )

    def save_many(self, *, items, model: str) -> None:
        MemoryEmbedding.objects.bulk_create(
            [
                MemoryEmbedding(
                    memory=memory,
                    model=model,
                    dimensions=len(vector),
                    vector=list(vector),
                    partition=partition_of(memory),
                    status=memory.status,
                )
                for memory, vector in items
            ],
            batch_size=500,
        )

    def delete(self, *, memory_ids: Iterable[UUID]) -> None:
        MemoryEmbedding.objects.filter(memory_id__in=list(memory_ids)).delete()

    def forget(self, *, memory_ids: Iterable[UUID], last: bool = True) -> None:
        # The vector rows were all there was, but for the graph of an erased user's partition:
        # its index entries hold their vectors until it is dropped (CONCURRENTLY, outside
        # this transaction: the periodic task's work, asked for now; should the broker be
        # down, the periodic run drops it).
        if last:
            task = current_app.tasks[INDEX_PARTITIONS_TASK]
            transaction.on_commit(task.apply_async, robust=True)

    def set_status(self, *, memory_ids: Iterable[UUID], status: str) -> None:
        MemoryEmbedding.objects.filter(memory_id__in=list(memory_ids)).update(status=status)

    def nearest(self, *, vector, partitions, k, status):
        if not partitions or k <= 0:
            return []
        sql, params = self.nearest_sql(vector=vector, partitions=partitions, k=k, status=status)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [Neighbour(UUID(str(row[0])), float(row[1])) for row in cursor.fetchall()]

    def nearest_few(self, *, vector, partitions, k, status):
        """The graph search of a large partition keeps hnsw.ef_search candidates on its way
        (RECALL_HNSW_EF_SEARCH for recall, whose 50 nearest must be right). A near
        duplicate of the query is among the very closest vectors, which a walk keeping far
        fewer finds too (SAVE_SIMILAR_EF_SEARCH). Set for this search only: in a caller's
        transaction the previous value is put back."""
        ef_search = max(settings.SAVE_SIMILAR_EF_SEARCH, k)
        # A transaction of its own ends the setting at its commit; only a caller's needs it
        # put back (one round trip more).
        inside_callers = connection.in_atomic_block
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('hnsw.ef_search'), set_config('hnsw.ef_search', %s, true)",
                [str(ef_search)],
            )
            previous = cursor.fetchone()[0]
            try:
                return self.nearest(vector=vector, partitions=partitions, k=k, status=status)
            finally:
                if inside_callers:
                    cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [previous])

    def nearest_sql(self, *, vector, partitions, k, status) -> tuple[str, list]:
        """One statement for the k nearest: (memory_id, distance) rows, nearest first.

        Each partition is searched on its own, named by equality, so that the planner can
        take the partition's own HNSW graph where it has one (partition_indexes), an exact
        scan of its rows (B-tree on partition) where it has not. A graph can come back short
        (dead index entries before a vacuum, rows of another status it scans past): then,
        and for partitions smaller than k, the rows of the partitions are scanned exactly.
        The exact part is gated on the count of the first part, so PostgreSQL runs it only
        when that came back short."""
        d = int(len(vector))
        query = Vector(list(vector)).to_text()
        distance = f"(vector::vector({d})) <=> %s::vector({d})"
        partitions = list(dict.fromkeys(partitions))
        per_partition = " UNION ALL ".join(
            f"(SELECT memory_id, {distance} AS distance FROM {TABLE} "
            f"WHERE dimensions = {d} AND partition = %s AND status = %s "
            "ORDER BY distance LIMIT %s)"
            for _ in partitions
        )
        per_partition_params = [
            p for partition in partitions for p in (query, partition, status, k)
        ]
        where = f"dimensions = {d} AND partition = ANY(%s) AND status = %s"
        sql = (
            # MATERIALIZED keeps the planner from pushing the ORDER BY into the index.
            "WITH by_index AS MATERIALIZED (SELECT memory_id, distance FROM "
            f"({per_partition}) AS per_partition ORDER BY distance LIMIT %s), "
            f"partition_rows AS MATERIALIZED (SELECT memory_id, vector FROM {TABLE} "
            f"WHERE {where} AND (SELECT count(*) FROM by_index) < %s) "
            "SELECT memory_id, distance FROM ("
            "SELECT memory_id, distance FROM by_index WHERE (SELECT count(*) FROM by_index) >= %s "
            f"UNION ALL (SELECT memory_id, {distance} AS distance FROM partition_rows "
            "ORDER BY distance LIMIT %s)) AS nearest ORDER BY distance"
        )
        params = [*per_partition_params, k, partitions, status, k, k, query, k]
        return sql, params

    def count(self) -> int:
        return MemoryEmbedding.objects.exclude(vector=None).count()

    def distance_sql(self, *, vector, memory_id: str) -> tuple[str, list]:
        d = int(len(vector))
        return (
            f"(SELECT (e.vector::vector({d})) <=> %s::vector({d}) FROM {TABLE} e "
            f"WHERE e.memory_id = {memory_id} AND e.dimensions = {d})",
            [Vector(list(vector)).to_text()],
        )

    def distances(self, *, vector, memory_ids, partitions=None):
        ids = list(memory_ids)
        if not ids:
            return []
        d = len(vector)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT memory_id, (vector::vector({d})) <=> %s::vector({d}) FROM {TABLE} "
                "WHERE memory_id = ANY(%s) AND dimensions = %s",
                [Vector(list(vector)).to_text(), ids, d],
            )
            return [Neighbour(UUID(str(row[0])), float(row[1])) for row in cursor.fetchall()]

    def vectors_of(self, *, memory_ids) -> dict:
        rows = MemoryEmbedding.objects.filter(
            memory_id__in=list(memory_ids), vector__isnull=False
        ).values_list("memory_id", "vector")
        # `vector` is never None here (the filter above), which the stubs cannot tell.
        return {
            memory_id: [float(x) for x in vector]
            for memory_id, vector in rows
            if vector is not None
        }

    def prepare(self, *, dimensions: int) -> None:
        pass  # the column takes any size; graphs follow the vectors (partition_indexes)
