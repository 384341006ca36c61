"""pgvector implementation: the vector column of MemoryEmbedding with an HNSW index per
dimension (an expression index, so the column itself can hold any model's vectors)."""

from collections.abc import Iterable, Sequence
from uuid import UUID

from django.db import connection
from pgvector import Vector

from memories.models import Memory, MemoryEmbedding

TABLE = MemoryEmbedding._meta.db_table


def create_index_sql(dimensions: int) -> str:
    d = int(dimensions)
    return (
        f"CREATE INDEX IF NOT EXISTS memory_embedding_hnsw_{d} ON {TABLE} "
        f"USING hnsw ((vector::vector({d})) vector_cosine_ops) WHERE dimensions = {d}"
    )


class PgVectorStore:
    def save(self, *, memory: Memory, vector: Sequence[float], model: str) -> None:
        from memories.recall.vector_store import partition_of

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

    def delete(self, *, memory_ids: Iterable[UUID]) -> None:
        MemoryEmbedding.objects.filter(memory_id__in=list(memory_ids)).delete()

    def set_status(self, *, memory_ids: Iterable[UUID], status: str) -> None:
        MemoryEmbedding.objects.filter(memory_id__in=list(memory_ids)).update(status=status)

    def nearest(self, *, vector, partitions, k, status):
        """The HNSW index answers for large partitions. An approximate index can come back
        short (dead index entries before a vacuum, a filter it scans past): then, and for
        partitions smaller than k, an exact scan of the partitions (B-tree on partition)
        gives the true nearest."""
        from memories.recall.vector_store import Neighbour

        if not partitions or k <= 0:
            return []
        d = len(vector)
        params = [Vector(list(vector)).to_text(), d, list(partitions), status, int(k)]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT memory_id, (vector::vector({d})) <=> %s::vector({d}) AS distance "
                f"FROM {TABLE} WHERE dimensions = %s AND partition = ANY(%s) AND status = %s "
                "ORDER BY distance LIMIT %s",
                params,
            )
            rows = cursor.fetchall()
            if len(rows) < k:
                # MATERIALIZED keeps the planner from pushing the ORDER BY into the index.
                cursor.execute(
                    f"WITH candidates AS MATERIALIZED (SELECT memory_id, vector FROM {TABLE} "
                    "WHERE dimensions = %s AND partition = ANY(%s) AND status = %s) "
                    f"SELECT memory_id, (vector::vector({d})) <=> %s::vector({d}) AS distance "
                    "FROM candidates ORDER BY distance LIMIT %s",
                    [d, list(partitions), status, params[0], int(k)],
                )
                rows = cursor.fetchall()
        return [Neighbour(UUID(str(row[0])), float(row[1])) for row in rows]

    def count(self) -> int:
        return MemoryEmbedding.objects.exclude(vector=None).count()

    def distances(self, *, vector, memory_ids):
        from memories.recall.vector_store import Neighbour

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
        return {memory_id: [float(x) for x in vector] for memory_id, vector in rows}
