"""Keyword search over key + value.

The keyword half of recall ranks with BM25 over the caller's own memories (bm25.py) from
index tables that are the same on both databases (postings.py), so both rank alike and no
user's scores depend on another user's memories. The list endpoint's `query` filter (every
word must match, as a prefix) uses the database's own full-text search: SQLite FTS5, or a
generated tsvector column with a GIN index on PostgreSQL."""

import functools
import heapq
import re
from collections.abc import Iterable, Sequence
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from memories.models import CarrierIds, Memory, Status
from memories.recall import bm25
from memories.recall.bm25 import KeywordHit
from memories.recall.postings import (
    collection_of,
    postings_add,
    postings_of,
    postings_remove,
)
from memories.recall.words import query_terms

FTS_TABLE = "fts_memories"
FTS_ROWS = "fts_memory_rows"
# How many found memories at most are completed with the common words (see search).
COMMON_WORD_LOOKUPS = 150
# Pages of the full-text index merged per step of an erasure's purge (one transaction each).
FTS_MERGE_PAGES = 100
MAX_FILTER_WORDS = 32


class KeywordIndex:
    """The BM25 index of active memories, on both databases; subclasses add the full-text
    filter of the database."""

    def save(self, *, memory: Memory, partition: str) -> None:
        """(Re)index a memory after its text or status changed."""
        postings_remove([memory.id])
        if memory.status == Status.ACTIVE and memory.deleted_at is None:
            postings_add([(memory, partition)])

    def save_new(self, *, memories: Sequence[Memory]) -> None:
        """save() for memories just inserted (none of them is indexed yet)."""
        from memories.recall.vector_store import partition_of

        postings_add(
            (memory, partition_of(memory))
            for memory in memories
            if memory.status == Status.ACTIVE and memory.deleted_at is None
        )

    def delete(self, *, memory_ids: Iterable[UUID]) -> None:
        postings_remove(memory_ids)

    def set_status(self, *, memory_ids: Iterable[UUID], status: str) -> None:
        from memories.recall.vector_store import partition_of

        memory_ids = list(memory_ids)
        postings_remove(memory_ids)
        if status == Status.ACTIVE:
            memories = Memory.objects.filter(id__in=memory_ids, deleted_at__isnull=True)
            postings_add((memory, partition_of(memory)) for memory in memories)

    def search(
        self,
        *,
        text: str,
        scopes: Sequence[CarrierIds],
        k: int,
        within: frozenset[UUID] | None = None,
    ) -> list[KeywordHit[UUID]]:
        """Up to k active memories of these scopes holding any query word, best first; with
        `within`, only those of these ids (a filter's)."""
        terms = query_terms(text)
        partition_ids, collection = collection_of([scope.partition for scope in scopes], terms)
        looked_up = bm25.terms_within_budget(terms, collection, settings.RECALL_KEYWORD_ROW_BUDGET)
        if not looked_up:
            return []
        found = postings_of(partition_ids=partition_ids, terms=looked_up)
        if within is not None:
            # The ids are UUIDs on PostgreSQL, hex text on SQLite.
            found = {m: held for m, held in found.items() if _as_uuid(m) in within}
        # Found memories also score by the common words that were not looked up. Only those
        # that could still reach the k best with every common word at its most need them.
        common = [t for t in terms if t not in looked_up and collection.term_memories.get(t)]
        if common and len(found) > k:
            partial = bm25.scores(terms=terms, postings=found, collection=collection)
            kth_best = sorted((score for score, _ in partial.values()), reverse=True)[k - 1]
            threshold = kth_best - bm25.most_a_memory_gains(common, collection)
            reachable = [m for m, (score, _) in partial.items() if score >= threshold]
            # Past COMMON_WORD_LOOKUPS of them, only the best by the rare words are completed:
            # each costs an index lookup, and the rare words have already ranked them.
            reachable = heapq.nsmallest(
                COMMON_WORD_LOOKUPS, reachable, key=lambda m: (-partial[m][0], bm25.tie_key(m))
            )
            found = {memory_id: found[memory_id] for memory_id in reachable}
        if common and found:
            more = postings_of(partition_ids=partition_ids, terms=common, memory_ids=list(found))
            for memory_id, held in more.items():
                found[memory_id].update(held)
        hits = bm25.rank(terms=terms, postings=found, collection=collection, k=k)
        return [KeywordHit(UUID(str(hit.memory_id)), hit.score, hit.evidence) for hit in hits]

    def filter_all_words(self, queryset: QuerySet[Memory], text: str) -> QuerySet[Memory]:
        raise NotImplementedError

    def purge_deleted(self, *, first: bool) -> bool:
        """One short step of dropping what deleted rows left in the full-text index itself
        (erasure), in the caller's transaction: `first` for the first step of a purge.
        Whether there is more to do (call again, with first=False)."""
        return False


def _as_uuid(memory_id) -> UUID:
    return memory_id if isinstance(memory_id, UUID) else UUID(str(memory_id))


def _filter_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())[:MAX_FILTER_WORDS]


class SqliteFtsIndex(KeywordIndex):
    """FTS5 holds every memory's text, whatever its status, for the list filter. FTS5 finds a
    row fast only by its rowid, so FTS_ROWS maps each memory to its row: a write replaces the
    row by rowid instead of scanning the table for an UNINDEXED memory_id."""

    def save(self, *, memory, partition):
        super().save(memory=memory, partition=partition)
        with connection.cursor() as cursor:
            _delete_fts_rows(cursor, [memory.id.hex])
            _insert_fts_rows(cursor, [memory])

    def save_new(self, *, memories):
        super().save_new(memories=memories)
        with connection.cursor() as cursor:
            _insert_fts_rows(cursor, memories)

    def delete(self, *, memory_ids):
        memory_ids = list(memory_ids)
        super().delete(memory_ids=memory_ids)
        with connection.cursor() as cursor:
            _delete_fts_rows(cursor, [memory_id.hex for memory_id in memory_ids])

    def purge_deleted(self, *, first: bool) -> bool:
        # A deleted FTS5 row only gets a delete marker; its words stay in the index segments
        # until they are merged. 'optimize' merges them all at once, but it rewrites the
        # whole index (every user's rows) in one transaction, holding the write lock. A
        # 'merge' with a negative page count starts the same full merge; later 'merge'
        # commands with a positive count carry it on by about that many pages each, until
        # one does nothing (total_changes moves by less than 2: FTS5's documentation).
        raw = connection.connection
        before = raw.total_changes
        pages = -FTS_MERGE_PAGES if first else FTS_MERGE_PAGES
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('merge', %s)", [pages]
            )
        return raw.total_changes - before >= 2

    def filter_all_words(self, queryset, text):
        terms = _filter_words(text)
        if not terms:
            return queryset
        # Prefix match per word, as a person typing into a filter box expects.
        match = "text : (" + " AND ".join(f'"{t}"*' for t in terms) + ")"
        return queryset.filter(
            id__in=RawSQL(f"SELECT memory_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [match])
        )


def _insert_fts_rows(cursor, memories: Iterable[Memory]) -> None:
    for memory in memories:
        cursor.execute(
            f"INSERT INTO {FTS_TABLE}(text, memory_id) VALUES (%s, %s)",
            [memory.embedding_text, memory.id.hex],
        )
        cursor.execute(
            f"INSERT INTO {FTS_ROWS}(memory_id, fts_rowid) VALUES (%s, %s)",
            [memory.id.hex, cursor.lastrowid],
        )


def _delete_fts_rows(cursor, memory_ids: Sequence[str]) -> None:
    for start in range(0, len(memory_ids), 500):
        chunk = list(memory_ids[start : start + 500])
        placeholders = ", ".join(["%s"] * len(chunk))
        cursor.execute(
            f"SELECT fts_rowid FROM {FTS_ROWS} WHERE memory_id IN ({placeholders})", chunk
        )
        rowids = [[row[0]] for row in cursor.fetchall()]
        if rowids:
            cursor.executemany(f"DELETE FROM {FTS_TABLE} WHERE rowid = %s", rowids)
            cursor.execute(f"DELETE FROM {FTS_ROWS} WHERE memory_id IN ({placeholders})", chunk)


class PostgresFullTextIndex(KeywordIndex):
    """The tsvector column is generated by PostgreSQL itself, so writes need no more work."""

    def filter_all_words(self, queryset, text):
        terms = _filter_words(text)
        if not terms:
            return queryset
        return queryset.extra(
            where=["search_vector @@ to_tsquery('english', %s)"],
            params=[" & ".join(f"{t}:*" for t in terms)],
        )


@functools.cache
def get_keyword_index() -> KeywordIndex:
    """The index of this process's database, chosen on first use (indexes keep no state)."""
    if connection.vendor == "postgresql":
        return PostgresFullTextIndex()
    return SqliteFtsIndex()
