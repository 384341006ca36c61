"""Keyword search over key + value: SQLite FTS5 (porter stemming, BM25) or PostgreSQL full
text (a generated tsvector column with a GIN index). Used for the list endpoint's `query`
filter (every word must match) and as the keyword half of recall (any word may match)."""

import hashlib
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Protocol
from uuid import UUID

from cachetools import LRUCache, TTLCache
from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from memories.models import Memory
from memories.recall.scopes import RecallScope, scopes_condition, scopes_sql

FTS_TABLE = "fts_memories"
MAX_TERMS = 32
# Words too common to say anything about a memory; FTS5 has no stop-word list of its own.
STOP_WORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her "
    "hers him his how i if in into is it its me my of on or our she so than that the their "
    "them then there these they this to too was we were what when where which who whom why "
    "will with would you your yours".split()
)


def query_terms(text: str) -> list[str]:
    """Lower-cased words of a query, stop words dropped, at most MAX_TERMS, in order."""
    words = [w for w in re.findall(r"\w+", text.lower()) if w not in STOP_WORDS]
    return list(dict.fromkeys(words))[:MAX_TERMS]


class KeywordIndex(Protocol):
    def save(self, *, memory: Memory, partition: str) -> None: ...
    def delete(self, *, memory_ids: Iterable[UUID]) -> None: ...
    def set_status(self, *, memory_ids: Iterable[UUID], status: str) -> None: ...
    def search(
        self, *, text: str, scopes: Sequence[RecallScope], k: int, status: str
    ) -> list[tuple[UUID, float]]:
        """Up to k (memory id, score > 0) of these scopes matching any query word, best
        first."""

    def filter_all_words(self, queryset: QuerySet[Memory], text: str) -> QuerySet[Memory]: ...

    def purge_deleted(self) -> None:
        """Drop what deleted rows left in the index itself (erasure)."""


def _partition_token(partition: str) -> str:
    # FTS5 tokenises on punctuation, so partitions are indexed as one opaque word.
    return "p" + hashlib.sha1(partition.encode()).hexdigest()[:24]


def _quoted(terms: Iterable[str]) -> str:
    return " OR ".join(f'"{t}"' for t in terms)


class SqliteFtsIndex:
    def save(self, *, memory: Memory, partition: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE memory_id = %s", [memory.id.hex])
            cursor.execute(
                f"INSERT INTO {FTS_TABLE}(part, text, memory_id, status) VALUES (%s, %s, %s, %s)",
                [_partition_token(partition), memory.embedding_text, memory.id.hex, memory.status],
            )

    def delete(self, *, memory_ids: Iterable[UUID]) -> None:
        with connection.cursor() as cursor:
            cursor.executemany(
                f"DELETE FROM {FTS_TABLE} WHERE memory_id = %s", [[i.hex] for i in memory_ids]
            )

    def set_status(self, *, memory_ids: Iterable[UUID], status: str) -> None:
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {FTS_TABLE} SET status = %s WHERE memory_id = %s",
                [[status, i.hex] for i in memory_ids],
            )

    def purge_deleted(self) -> None:
        # A deleted FTS5 row only gets a delete marker; its words stay in the index segments
        # until they are merged. 'optimize' merges them all now (it rewrites the index, so it
        # is for erasure, not for every delete).
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")

    def search(self, *, text, scopes, k, status):
        terms = query_terms(text)
        partitions = [scope.partition for scope in scopes]
        if not terms or not partitions:
            return []
        # BM25 already weighs words by their rarity, so what is found is ranked by the words
        # it was found by.
        terms = _words_within_budget(terms, scopes, status, shares_of=_fts_term_shares)
        if not terms:
            return []
        match = (
            f"part : ({_quoted(_partition_token(p) for p in partitions)}) "
            f"AND text : ({_quoted(terms)})"
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT memory_id, -bm25({FTS_TABLE}, 0.0, 1.0, 0.0, 0.0) AS score "
                f"FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s AND status = %s "
                "ORDER BY score DESC LIMIT %s",
                [match, status, int(k)],
            )
            rows = cursor.fetchall()
        # BM25 of a word found in most rows is ~0; keep it as a (weak) positive match.
        return [(UUID(hex=row[0]), max(float(row[1]), 1e-6)) for row in rows]

    def filter_all_words(self, queryset, text):
        terms = re.findall(r"\w+", text.lower())[:MAX_TERMS]
        if not terms:
            return queryset
        # Prefix match per word, as a person typing into a filter box expects.
        match = "text : (" + " AND ".join(f'"{t}"*' for t in terms) + ")"
        return queryset.filter(
            id__in=RawSQL(f"SELECT memory_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [match])
        )


class PostgresFullTextIndex:
    """The tsvector column is generated by PostgreSQL itself, so writes need no work here."""

    def save(self, *, memory, partition):
        pass

    def delete(self, *, memory_ids):
        pass

    def set_status(self, *, memory_ids, status):
        pass

    def purge_deleted(self):
        pass  # the index entries go with the rows (VACUUM reclaims their space)

    def search(self, *, text, scopes, k, status):
        statement = self.search_sql(text=text, scopes=scopes, k=k, status=status)
        if statement is None:
            return []
        with connection.cursor() as cursor:
            cursor.execute(*statement)
            rows = cursor.fetchall()
        return [(UUID(str(memory_id)), max(float(rank), 1e-6)) for memory_id, rank in rows]

    def search_sql(
        self, *, text, scopes, k, status, columns: Sequence[str] = ()
    ) -> tuple[str, list] | None:
        """The search as one SELECT of (id, rank, *columns) rows, best first, to run alone or
        inside a larger statement; None when no word can match. Memories are found by the
        query words within RECALL_KEYWORD_ROW_BUDGET (see lexemes_within_budget) and ranked
        by all of them."""
        terms = query_terms(text)
        if not terms or not scopes:
            return None
        lexemes = lexemes_of(terms)
        if not lexemes:
            return None
        matched = _words_within_budget(
            lexemes, scopes, status, shares_of=lambda _lexemes: _lexeme_shares()
        )
        if not matched:
            return None
        in_scopes, scope_params = scopes_sql(scopes)
        sql = (
            "SELECT id, ts_rank(search_vector, %s::tsquery, 1) AS rank"
            f"{''.join(', ' + column for column in columns)} "
            f"FROM {Memory._meta.db_table} WHERE ({in_scopes}) AND status = %s "
            "AND deleted_at IS NULL AND search_vector @@ %s::tsquery "
            "ORDER BY rank DESC, id LIMIT %s"
        )
        return sql, [_tsquery(lexemes), *scope_params, status, _tsquery(matched), int(k)]

    def filter_all_words(self, queryset, text):
        terms = re.findall(r"\w+", text.lower())[:MAX_TERMS]
        if not terms:
            return queryset
        return queryset.extra(
            where=["search_vector @@ to_tsquery('english', %s)"],
            params=[" & ".join(f"{t}:*" for t in terms)],
        )


def lexemes_within_budget(
    lexemes: Sequence[str],
    *,
    shares: dict[str, float],
    unlisted_share: float,
    rows: int,
    budget: int,
) -> list[str]:
    """The query words (lexemes) the keyword half looks memories up by.

    Ranking costs time per matching memory, so a search matches on the rarest words whose
    estimated matches (their share of all memories times the caller's `rows`) add up to at
    most `budget`; the rest are too common to say which memory is meant (their IDF is near
    zero) and still count in the ranking of what was found. All words are kept when the
    caller has at most `budget` memories, or when there are no statistics (shares empty)."""
    if rows <= budget:
        return list(lexemes)
    estimate = {lexeme: shares.get(lexeme, unlisted_share) * rows for lexeme in lexemes}
    kept: set[str] = set()
    total = 0.0
    for lexeme in sorted(lexemes, key=lambda lexeme: (estimate[lexeme], lexeme)):
        if total + estimate[lexeme] > budget:
            break
        kept.add(lexeme)
        total += estimate[lexeme]
    return [lexeme for lexeme in lexemes if lexeme in kept]


def _words_within_budget(words, scopes, status, *, shares_of) -> list[str]:
    """lexemes_within_budget for the caller's memories; `shares_of(words)` gives the shares
    (and the share of an unlisted word) only when the caller has more than the budget."""
    rows = _scope_rows(scopes, status)
    budget = settings.RECALL_KEYWORD_ROW_BUDGET
    if rows <= budget:
        return list(words)
    shares, unlisted_share = shares_of(words)
    return lexemes_within_budget(
        words, shares=shares, unlisted_share=unlisted_share, rows=rows, budget=budget
    )


# Counts and statistics a few minutes old are good enough to bound the keyword work.
STATISTICS_SECONDS = 300
_statistics = TTLCache(maxsize=10_000, ttl=STATISTICS_SECONDS)
_statistics_lock = threading.Lock()


def _cached(key, compute):
    key = (connection.alias, connection.settings_dict["NAME"], *key)
    with _statistics_lock:
        if key in _statistics:
            return _statistics[key]
    value = compute()
    with _statistics_lock:
        _statistics[key] = value
    return value


def clear_statistics() -> None:
    with _statistics_lock:
        _statistics.clear()
        _word_lexemes.clear()


def _scope_rows(scopes: Sequence[RecallScope], status: str) -> int:
    """How many memories of these scopes there are (cached)."""
    return _cached(
        ("rows", tuple(sorted(scope.partition for scope in scopes)), status),
        lambda: Memory.objects.filter(
            scopes_condition(scopes), status=status, deleted_at__isnull=True
        ).count(),
    )


def _lexeme_shares() -> tuple[dict[str, float], float]:
    """The share of memories holding each common lexeme, from the statistics ANALYZE keeps
    for the tsvector column, and a share no unlisted lexeme exceeds (cached)."""

    def read() -> tuple[dict[str, float], float]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename = %s "
                "AND attname = 'search_vector'",
                [Memory._meta.db_table],
            )
            row = cursor.fetchone()
        if not row or not row[0]:
            return {}, 0.0
        lexemes, frequencies = row
        # The frequencies list ends with the minimum, maximum and null share.
        return dict(zip(lexemes, frequencies, strict=False)), float(frequencies[-3])

    return _cached(("lexeme shares",), read)


def _fts_term_shares(terms: Sequence[str]) -> tuple[dict[str, float], float]:
    """The share of all memories each query word is found in (FTS5 stems it as it indexes;
    counting a word's matches reads only its doclist). Cached per word."""

    def count(match: str | None) -> int:
        with connection.cursor() as cursor:
            if match is None:
                cursor.execute(f"SELECT count(*) FROM {FTS_TABLE}")
            else:
                cursor.execute(
                    f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [match]
                )
            return cursor.fetchone()[0]

    total = _cached(("fts rows",), lambda: count(None))
    if not total:
        return {}, 0.0
    counts = {
        term: _cached(("fts term", term), lambda term=term: count(f'text : "{term}"'))
        for term in terms
    }
    return {term: n / total for term, n in counts.items()}, 0.0


_word_lexemes: LRUCache = LRUCache(maxsize=100_000)


def lexemes_of(words: Sequence[str]) -> list[str]:
    """The lexemes of these words as the english text search configuration normalises them
    (the words of earlier queries are remembered, so most searches skip this round trip)."""
    with _statistics_lock:
        known = {word: _word_lexemes[word] for word in words if word in _word_lexemes}
    if len(known) < len(set(words)):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT word, tsvector_to_array(to_tsvector('english', word)) "
                "FROM unnest(%s::text[]) AS word",
                [[word for word in words if word not in known]],
            )
            found = {word: tuple(lexemes) for word, lexemes in cursor.fetchall()}
        known |= found
        with _statistics_lock:
            _word_lexemes.update(found)
    return list(dict.fromkeys(lexeme for word in words for lexeme in known[word]))


def _tsquery(lexemes: Iterable[str]) -> str:
    """An OR query of already normalised lexemes, quoted so none is read as an operator."""
    quoted = ("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)
    return " | ".join(quoted)


def get_keyword_index() -> KeywordIndex:
    if connection.vendor == "postgresql":
        return PostgresFullTextIndex()
    return SqliteFtsIndex()
