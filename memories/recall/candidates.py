"""The candidates of a recall: the memories either half brings (nearest neighbours, keyword
hits), with what scoring reads of them.

Two ways to the same rows. On PostgreSQL with a query vector, one statement does it all: the
nearest neighbours, the keyword hits, their scoring fields and the distances of keyword-only
hits (each separate query would cost a round trip and a plan as dear as the HNSW search
itself). Elsewhere the vector store and the keyword index are asked in turn and the rows are
read after."""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID

from django.db import connection

from memories.models import Memory, MemoryEmbedding
from memories.recall.keyword import get_keyword_index
from memories.recall.scopes import RecallScope, scopes_condition, scopes_sql
from memories.recall.vector_store import get_vector_store

SCORING_FIELDS = (
    "id",
    "scope",
    "importance",
    "confidence",
    "updated_at",
    "last_accessed_at",
    "access_count",
)


class Candidate(NamedTuple):  # a tuple: a recall builds some 100 of them
    memory_id: UUID
    similarity: float | None  # cosine similarity; None when there is no query vector
    keyword: float  # keyword score over the best keyword hit's, 0 when no word matched
    scope: str
    importance: float
    confidence: float
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: int


def find_candidates(
    *,
    query: str,
    vector: Sequence[float] | None,
    scopes: Sequence[RecallScope],
    k: int,
    status: str,
) -> list[Candidate]:
    """Up to k nearest neighbours and up to k keyword hits, active in these scopes."""
    if not scopes:
        return []
    if vector is not None and connection.vendor == "postgresql":
        return _in_one_statement(query=query, vector=vector, scopes=scopes, k=k, status=status)
    return _step_by_step(query=query, vector=vector, scopes=scopes, k=k, status=status)


def _candidates(rows, *, similarities, keywords) -> list[Candidate]:
    """Candidates from rows in SCORING_FIELDS order, with each row's similarity (None without
    a query vector) and raw keyword score (None when no word matched), position by position."""
    best_keyword = max((k for k in keywords if k is not None), default=0.0)
    return [
        Candidate(
            memory_id=row[0],
            similarity=similarity,
            keyword=keyword / best_keyword if keyword is not None else 0.0,
            scope=row[1],
            importance=row[2],
            confidence=row[3],
            updated_at=row[4],
            last_accessed_at=row[5],
            access_count=row[6],
        )
        for row, similarity, keyword in zip(rows, similarities, keywords, strict=True)
    ]


def _step_by_step(*, query, vector, scopes, k, status) -> list[Candidate]:
    partitions = [scope.partition for scope in scopes]
    similarity: dict[UUID, float] = {}
    if vector is not None:
        store = get_vector_store()
        for hit in store.nearest(vector=vector, partitions=partitions, k=k, status=status):
            similarity[hit.memory_id] = hit.similarity
    keyword = dict(get_keyword_index().search(text=query, scopes=scopes, k=k, status=status))
    if vector is not None:
        missing = [memory_id for memory_id in keyword if memory_id not in similarity]
        for hit in store.distances(vector=vector, memory_ids=missing):
            similarity[hit.memory_id] = hit.similarity
    ids = set(similarity) | set(keyword)
    if not ids:
        return []
    rows = list(
        Memory.objects.filter(
            scopes_condition(scopes), id__in=ids, status=status, deleted_at__isnull=True
        ).values_list(*SCORING_FIELDS)
    )
    return _candidates(
        rows,
        similarities=[similarity.get(row[0], 0.0) if vector is not None else None for row in rows],
        keywords=[keyword.get(row[0]) for row in rows],
    )


# Read as seconds since the epoch: psycopg reads a float ~10 times faster than a timestamp,
# and a recall reads some 200 of them.
EPOCH_FIELDS = ("updated_at", "last_accessed_at")


def _columns(alias: str, fields) -> str:
    return ", ".join(
        f"date_part('epoch', {alias}.{field})" if field in EPOCH_FIELDS else f"{alias}.{field}"
        for field in fields
    )


def _with_datetimes(row: tuple, positions: list[int]) -> list:
    row = list(row)
    for i in positions:
        if row[i] is not None:
            row[i] = datetime.fromtimestamp(row[i], tz=UTC)
    return row


def _in_one_statement(*, query, vector, scopes, k, status) -> list[Candidate]:
    from memories.recall.keyword import PostgresFullTextIndex
    from memories.recall.vector_store.pgvector import PgVectorStore

    fields = SCORING_FIELDS[1:]  # after the id
    nearest_sql, nearest_params = PgVectorStore().nearest_sql(
        vector=vector, partitions=[scope.partition for scope in scopes], k=k, status=status
    )
    keyword = PostgresFullTextIndex().search_sql(
        text=query, scopes=scopes, k=k, status=status, columns=fields
    )
    if keyword is None:  # no word to look up: no rows, of the same columns
        keyword = (
            f"SELECT id, 0.0::real AS rank, {', '.join(fields)} "
            f"FROM {Memory._meta.db_table} WHERE false",
            [],
        )
    in_scopes, scope_params = scopes_sql(scopes, prefix="m.")
    d = int(len(vector))
    # Keyword hits come with their scoring fields (the keyword search reads their rows
    # anyway); nearest neighbours that are not keyword hits are read by primary key.
    sql = (
        f"WITH nearest AS MATERIALIZED ({nearest_sql}), "
        f"keyword AS MATERIALIZED ({keyword[0]}) "
        f"SELECT keyword.id, {_columns('keyword', fields)}, keyword.rank, "
        f"COALESCE(nearest.distance, (SELECT (e.vector::vector({d})) <=> %s::vector({d}) "
        f"FROM {MemoryEmbedding._meta.db_table} e "
        f"WHERE e.memory_id = keyword.id AND e.dimensions = {d})) "
        "FROM keyword LEFT JOIN nearest ON nearest.memory_id = keyword.id "
        "UNION ALL "
        f"SELECT m.id, {_columns('m', fields)}, NULL, nearest.distance "
        f"FROM nearest JOIN {Memory._meta.db_table} m ON m.id = nearest.memory_id "
        "WHERE m.id NOT IN (SELECT id FROM keyword) "
        f"AND ({in_scopes}) AND m.status = %s AND m.deleted_at IS NULL"
    )
    params = [*nearest_params, *keyword[1], nearest_params[0], *scope_params, status]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    n = len(SCORING_FIELDS)
    timestamps = [SCORING_FIELDS.index(field) for field in EPOCH_FIELDS]
    return _candidates(
        [_with_datetimes(row[:n], timestamps) for row in rows],
        # A keyword-only hit without a stored vector has no distance.
        similarities=[1.0 - float(row[-1]) if row[-1] is not None else 0.0 for row in rows],
        keywords=[max(float(row[n]), 1e-6) if row[n] is not None else None for row in rows],
    )
