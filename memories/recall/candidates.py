"""The candidates of a recall: the memories either half brings (nearest neighbours, keyword
hits), with what scoring reads of them.

The keyword hits come first (keyword_hits: bm25.py over the caller's own memories). Then, on
PostgreSQL with a query vector, one statement reads the nearest neighbours, the rows of both
and the distances of keyword-only hits (each separate query would cost a round trip and a
plan as dear as the HNSW search itself); elsewhere the vector store is asked and the rows
are read after."""

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from memories.filters.compile import filter_condition
from memories.filters.language import Node
from memories.models import CarrierIds, Memory, Status, unexpired
from memories.recall.bm25 import KeywordHit
from memories.recall.keyword import get_keyword_index
from memories.recall.scopes import scopes_condition, scopes_sql
from memories.recall.vector_store import get_vector_store

# A filter that matches more memories than RECALL_FILTER_EXACT_MAX: the nearest and the
# keyword hits are fetched this many times over, and those it matches kept.
FILTER_OVERFETCH = 10
SCORING_FIELDS = (
    "id",
    "scope",
    "importance",
    "confidence",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "language",
)


class Candidate(NamedTuple):  # a tuple: a recall builds some 100 of them
    memory_id: UUID
    similarity: float | None  # cosine similarity; None when there is no query vector
    keyword: float  # BM25 over the best keyword hit's, 0 when no word matched
    keyword_evidence: float  # share of the query's word weight matched, 0..1 (bm25.py)
    scope: str
    importance: float
    confidence: float
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    entity: float = 0.0  # evidence that the query names an entity it is about (entities.py)
    language: str | None = None  # the memory's language (languages.py); "" or None: unknown


@dataclass(frozen=True)
class Filtered:
    """A recall's filter (memories.filters), and the ids of the memories it matches in the
    recall's scopes when they are at most RECALL_FILTER_EXACT_MAX (None when more)."""

    node: Node
    ids: frozenset[UUID] | None


def filtered(
    *, memory_filter: Node, scopes: Sequence[CarrierIds], as_of: datetime | None = None
) -> Filtered:
    """The filter with the ids it matches in these scopes, when there are few enough to
    search among them alone (_step_by_step)."""
    limit = settings.RECALL_FILTER_EXACT_MAX
    current = current_now() if as_of is None else valid_at(as_of)
    ids = list(
        Memory.objects.filter(current, scopes_condition(scopes), deleted_at__isnull=True)
        .filter(filter_condition(memory_filter))
        .values_list("id", flat=True)[: limit + 1]
    )
    return Filtered(memory_filter, frozenset(ids) if len(ids) <= limit else None)


def keyword_hits(
    *, query: str, scopes: Sequence[CarrierIds], k: int, within: Filtered | None = None
) -> dict[UUID, KeywordHit[UUID]]:
    """Up to k keyword hits, active in these scopes, by memory id; with a filter (`within`),
    among the memories it matches: found among its ids when it listed them, else the best
    k · FILTER_OVERFETCH of all, which the rows' reading filters after (find_candidates)."""
    if not scopes:
        return {}
    if within is not None and within.ids is not None:
        if not within.ids:
            return {}
        hits = get_keyword_index().search(text=query, scopes=scopes, k=k, within=within.ids)
    elif within is not None:
        hits = get_keyword_index().search(text=query, scopes=scopes, k=k * FILTER_OVERFETCH)
    else:
        hits = get_keyword_index().search(text=query, scopes=scopes, k=k)
    return {hit.memory_id: hit for hit in hits}


def find_candidates(
    *,
    vector: Sequence[float] | None,
    scopes: Sequence[CarrierIds],
    k: int,
    keyword: dict[UUID, KeywordHit[UUID]],
    as_of: datetime | None = None,
    entity: dict[UUID, float] | None = None,
    within: Filtered | None = None,
) -> list[Candidate]:
    """Up to k nearest neighbours and the keyword hits (keyword_hits), active in these
    scopes; with as_of, the memories that were current then (valid_at), superseded and
    archived ones included, found by vector (the keyword index holds active memories only);
    with a filter (`within`), only memories it matches (_step_by_step)."""
    if not scopes:
        return []
    entity = entity or {}
    # The memories of the entities the query names are fetched as the keyword hits are.
    wanted = [*keyword, *(memory_id for memory_id in entity if memory_id not in keyword)]
    if within is None and as_of is None and vector is not None and get_vector_store().composes_sql:
        rows, similarities = _in_one_statement(vector=vector, scopes=scopes, k=k, keyword=wanted)
    else:
        rows, similarities = _step_by_step(
            vector=vector, scopes=scopes, k=k, keyword=wanted, as_of=as_of, within=within
        )
    best_keyword = max((hit.score for hit in keyword.values()), default=0.0)
    candidates = []
    for row, similarity in zip(rows, similarities, strict=True):
        hit = keyword.get(row[0])
        candidates.append(
            Candidate(
                memory_id=row[0],
                similarity=similarity,
                keyword=hit.score / best_keyword if hit else 0.0,
                keyword_evidence=hit.evidence if hit else 0.0,
                scope=row[1],
                importance=row[2],
                confidence=row[3],
                updated_at=row[4],
                last_accessed_at=row[5],
                access_count=row[6],
                entity=entity.get(row[0], 0.0),
                language=row[7],
            )
        )
    return candidates


def current_now() -> Q:
    """Memories current now: active and not expired (an expired one the retention sweep has
    not archived yet is gone already). A condition on the rows recall reads anyway: it costs
    no query of its own."""
    return Q(status=Status.ACTIVE) & unexpired(timezone.now())


# An explanation lists at most this many expired memories not archived yet.
EXPIRED_LISTED_MAX = 20


def expired_not_archived(
    *, scopes: Sequence[CarrierIds], within: Filtered | None = None
) -> dict[Memory, datetime]:
    """The active memories of these scopes (matching the filter) whose time has come, with
    the moment they expired, soonest first; at most EXPIRED_LISTED_MAX. Recall leaves them
    out (current_now); an explained recall shows them."""
    now = timezone.now()
    memories = Memory.objects.filter(
        scopes_condition(scopes), status=Status.ACTIVE, deleted_at__isnull=True
    ).exclude(unexpired(now))
    if within is not None:
        memories = memories.filter(filter_condition(within.node))
    found = {}
    for memory in memories.order_by("updated_at", "id")[:EXPIRED_LISTED_MAX]:
        moments = [m for m in (memory.expires_at, memory.retention_expires_at) if m and m <= now]
        found[memory] = min(moments)
    return found


def valid_at(moment: datetime) -> Q:
    """Memories that were current at `moment`: active ones from their valid_from until they
    expire, and archived ones that were current (valid_until set) until after it."""
    return Q(valid_from__lte=moment) & (
        (Q(status=Status.ACTIVE, valid_until__isnull=True) & unexpired(moment))
        | Q(status=Status.ARCHIVED, valid_until__gt=moment)
    )


def _step_by_step(
    *, vector, scopes, k, keyword, as_of=None, within: Filtered | None = None
) -> tuple[list, list]:
    """Rows in SCORING_FIELDS order of the neighbours and keyword hits, and the similarity
    of each (None without a query vector). With a filter (`within`), among the memories it
    matches: when it listed them (at most RECALL_FILTER_EXACT_MAX), the k nearest of them
    all, measured one by one, so a filter matching 1% of a user's memories still gives k;
    else the k · FILTER_OVERFETCH nearest of the scopes, of which the rows' reading keeps
    those the filter matches (a filter matching so many matches enough of the nearest)."""
    similarity: dict[UUID, float] = {}
    statuses = [Status.ACTIVE] if as_of is None else [Status.ACTIVE, Status.ARCHIVED]
    listed = within.ids if within is not None else None
    if vector is not None:
        store = get_vector_store()
        partitions = [scope.partition for scope in scopes]
        if listed is not None:
            measured = store.distances(vector=vector, memory_ids=listed, partitions=partitions)
            for hit in heapq.nsmallest(k, measured, key=lambda hit: (hit.distance, hit.memory_id)):
                similarity[hit.memory_id] = hit.similarity
        else:
            wide = k if within is None else k * FILTER_OVERFETCH
            for status in statuses:
                for hit in store.nearest(
                    vector=vector, partitions=partitions, k=wide, status=status
                ):
                    similarity[hit.memory_id] = hit.similarity
        missing = [memory_id for memory_id in keyword if memory_id not in similarity]
        for hit in store.distances(vector=vector, memory_ids=missing, partitions=partitions):
            similarity[hit.memory_id] = hit.similarity
    ids = set(similarity) | set(keyword)
    if listed is not None:
        ids &= listed
    if not ids:
        return [], []
    current = current_now() if as_of is None else valid_at(as_of)
    memories = Memory.objects.filter(
        current, scopes_condition(scopes), id__in=ids, deleted_at__isnull=True
    )
    if within is not None:
        memories = memories.filter(filter_condition(within.node))
    rows = list(memories.values_list(*SCORING_FIELDS))
    similarities = [similarity.get(row[0], 0.0) if vector is not None else None for row in rows]
    return rows, similarities


# Read as seconds since the epoch: psycopg reads a float ~10 times faster than a timestamp,
# and a recall reads some 100 of them.
EPOCH_FIELDS = ("updated_at", "last_accessed_at")


def _in_one_statement(*, vector, scopes, k, keyword) -> tuple[list, list]:
    """As _step_by_step, in one statement (for a store that composes_sql, PostgreSQL's): the
    nearest neighbours, the rows of those and of the keyword hits, and the distances of
    keyword-only hits. `date_part` and `unnest(uuid[])` are PostgreSQL's."""
    store = get_vector_store()
    nearest_sql, nearest_params = store.nearest_sql(
        vector=vector,
        partitions=[scope.partition for scope in scopes],
        k=k,
        status=Status.ACTIVE,
    )
    distance_sql, distance_params = store.distance_sql(vector=vector, memory_id="m.id")
    in_scopes, scope_params = scopes_sql(scopes, prefix="m.")
    columns = ", ".join(
        f"date_part('epoch', m.{field})" if field in EPOCH_FIELDS else f"m.{field}"
        for field in SCORING_FIELDS
    )
    sql = (
        f"WITH nearest AS MATERIALIZED ({nearest_sql}), "
        "wanted AS (SELECT memory_id AS id FROM nearest "
        "UNION SELECT unnest(%s::uuid[]) AS id) "
        f"SELECT {columns}, COALESCE(nearest.distance, {distance_sql}) "
        f"FROM wanted JOIN {Memory._meta.db_table} m ON m.id = wanted.id "
        "LEFT JOIN nearest ON nearest.memory_id = m.id "
        f"WHERE ({in_scopes}) AND m.status = %s AND m.deleted_at IS NULL"
        # Not expired (current_now): the sweep may not have archived it yet.
        " AND (m.expires_at IS NULL OR m.expires_at > %s)"
        " AND (m.retention_expires_at IS NULL OR m.retention_expires_at > %s)"
    )
    now = timezone.now()
    params = [
        *nearest_params,
        list(keyword),
        *distance_params,
        *scope_params,
        Status.ACTIVE,
        now,
        now,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    timestamps = [SCORING_FIELDS.index(field) for field in EPOCH_FIELDS]
    rows = []
    for row in fetched:
        row = list(row[: len(SCORING_FIELDS)])
        for i in timestamps:
            if row[i] is not None:
                row[i] = datetime.fromtimestamp(row[i], tz=UTC)
        rows.append(row)
    # A keyword-only hit without a stored vector has no distance.
    similarities = [1.0 - float(row[-1]) if row[-1] is not None else 0.0 for row in fetched]
    return rows, similarities
