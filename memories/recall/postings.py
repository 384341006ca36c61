"""The keyword index of active memories as plain tables, the same on both databases: a
posting per (memory, term), a count per (partition, term) and totals per partition (see
KeywordPartition, KeywordTerm, KeywordPosting). Writes run inside the caller's transaction.

Locks are taken in one order, partition rows (sorted) before term rows (sorted), so two
transactions writing memories of the same partition queue instead of deadlocking."""

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from uuid import UUID

from django.db import connection

from memories.models import KeywordPartition, KeywordPosting, KeywordTerm, Memory
from memories.recall.bm25 import Collection
from memories.recall.words import index_terms

PARTITIONS = KeywordPartition._meta.db_table
TERMS = KeywordTerm._meta.db_table
POSTINGS = KeywordPosting._meta.db_table
CHUNK = 500  # rows per statement, well below SQLite's limit on parameters


def _id(memory_id: UUID):
    # As the database stores ids (SQLite keeps UUIDs as 32 hex characters).
    return Memory._meta.pk.get_db_prep_value(memory_id, connection)


def _in(values: Sequence) -> str:
    return "(" + ", ".join(["%s"] * len(values)) + ")"


def _chunks(values: Sequence, size: int = CHUNK):
    for start in range(0, len(values), size):
        yield values[start : start + size]


def postings_add(memories: Iterable[tuple[Memory, str]]) -> None:
    """Index these (memory, partition) pairs; a memory without any indexed word is left out
    (it could never be found by a word)."""
    by_partition: dict[str, list[tuple[UUID, Counter]]] = defaultdict(list)
    for memory, partition in memories:
        terms = index_terms(memory.embedding_text)
        if terms:
            by_partition[partition].append((memory.id, terms))
    with connection.cursor() as cursor:
        for partition in sorted(by_partition):
            items = by_partition[partition]
            cursor.execute(
                f"INSERT INTO {PARTITIONS} (partition, memories, words) VALUES (%s, %s, %s) "
                f"ON CONFLICT (partition) DO UPDATE SET "
                f"memories = {PARTITIONS}.memories + excluded.memories, "
                f"words = {PARTITIONS}.words + excluded.words RETURNING id",
                [partition, len(items), sum(t.total() for _, t in items)],
            )
            partition_id = cursor.fetchone()[0]
            counts = sorted(Counter(term for _, terms in items for term in terms).items())
            for chunk in _chunks(counts):
                cursor.execute(
                    f"INSERT INTO {TERMS} (partition_id, term, memories) VALUES "
                    + ", ".join(["(%s, %s, %s)"] * len(chunk))
                    + f" ON CONFLICT (partition_id, term) DO UPDATE SET "
                    f"memories = {TERMS}.memories + excluded.memories",
                    [value for term, n in chunk for value in (partition_id, term, n)],
                )
            rows = [
                (_id(memory_id), partition_id, term, occurrences, terms.total())
                for memory_id, terms in items
                for term, occurrences in terms.items()
            ]
            for chunk in _chunks(rows):
                cursor.execute(
                    f"INSERT INTO {POSTINGS} (memory_id, partition_id, term, occurrences, length) "
                    "VALUES " + ", ".join(["(%s, %s, %s, %s, %s)"] * len(chunk)),
                    [value for row in chunk for value in row],
                )


def postings_remove(memory_ids: Iterable[UUID]) -> None:
    """Take these memories out of the index (those not in it are skipped), dropping the
    counts that reach zero."""
    ids = [_id(memory_id) for memory_id in memory_ids]
    rows = []
    with connection.cursor() as cursor:
        for chunk in _chunks(ids):
            cursor.execute(
                f"SELECT memory_id, partition_id, term, length FROM {POSTINGS} "
                f"WHERE memory_id IN {_in(chunk)}",
                chunk,
            )
            rows.extend(cursor.fetchall())
        if not rows:
            return
        for chunk in _chunks(ids):
            cursor.execute(f"DELETE FROM {POSTINGS} WHERE memory_id IN {_in(chunk)}", chunk)
        lengths = {(memory_id, partition_id): length for memory_id, partition_id, _, length in rows}
        totals: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for (_, partition_id), length in lengths.items():
            totals[partition_id][0] += 1
            totals[partition_id][1] += length
        for partition_id in sorted(totals):
            cursor.execute(
                f"UPDATE {PARTITIONS} SET memories = memories - %s, words = words - %s "
                "WHERE id = %s",
                [*totals[partition_id], partition_id],
            )
        counts = sorted(Counter((partition_id, term) for _, partition_id, term, _ in rows).items())
        cursor.executemany(
            f"UPDATE {TERMS} SET memories = memories - %s WHERE partition_id = %s AND term = %s",
            [[n, partition_id, term] for (partition_id, term), n in counts],
        )
        emptied: dict[int, list[str]] = defaultdict(list)
        for partition_id, term in (key for key, _ in counts):
            emptied[partition_id].append(term)
        for partition_id, terms in sorted(emptied.items()):
            for chunk in _chunks(terms):
                cursor.execute(
                    f"DELETE FROM {TERMS} WHERE partition_id = %s AND memories <= 0 "
                    f"AND term IN {_in(chunk)}",
                    [partition_id, *chunk],
                )
        for partition_id in sorted(totals):
            cursor.execute(
                f"DELETE FROM {PARTITIONS} WHERE id = %s AND memories <= 0", [partition_id]
            )


def collection_of(partitions: Sequence[str], terms: Sequence[str]) -> tuple[list[int], Collection]:
    """The ids of these partitions (those with indexed memories) and their statistics for
    these terms, in one statement (a search's first step: one round trip less than two)."""
    if not partitions:
        return [], Collection(0, 0, {})
    with connection.cursor() as cursor:
        if terms:
            cursor.execute(
                f"SELECT p.id, p.memories, p.words, t.term, t.memories FROM {PARTITIONS} p "
                f"LEFT JOIN {TERMS} t ON t.partition_id = p.id AND t.term IN {_in(terms)} "
                f"WHERE p.partition IN {_in(partitions)}",
                [*terms, *partitions],
            )
        else:
            cursor.execute(
                f"SELECT id, memories, words, NULL, NULL FROM {PARTITIONS} "
                f"WHERE partition IN {_in(partitions)}",
                list(partitions),
            )
        rows = cursor.fetchall()
    totals = {partition_id: (memories, words) for partition_id, memories, words, _, _ in rows}
    term_memories: Counter = Counter()
    for _, _, _, term, memories in rows:
        if term is not None:
            term_memories[term] += int(memories)
    collection = Collection(
        memories=sum(memories for memories, _ in totals.values()),
        words=sum(words for _, words in totals.values()),
        term_memories=dict(term_memories),
    )
    return sorted(totals), collection


def postings_of(
    *, partition_ids: Sequence[int], terms: Sequence[str], memory_ids: Sequence = ()
) -> dict:
    """{memory id: {term: (occurrences, length)}} for these terms: every memory of these
    partitions that holds one, or only the given memories when `memory_ids` is given. Ids
    are as the database returns them (and are taken back as such): a search reads hundreds
    and turns only its k best into UUIDs."""
    found: dict = defaultdict(dict)
    if not partition_ids or not terms:
        return found
    with connection.cursor() as cursor:
        if memory_ids:
            # Each memory's postings are looked up by the (memory, term) index. Both planners
            # would rather scan a common term's postings and filter them by memory (their
            # statistics give every term the same number of postings): 5-10 times slower at
            # 100,000 memories. SQLite is told the index; PostgreSQL gets a per-memory lateral
            # lookup, which only that index answers. OFFSET 0 keeps PostgreSQL from pulling
            # the lateral subquery up into a hash join over the terms' postings (it did: 4,491
            # postings read for 150 memories, 4-5 ms against 0.2 ms).
            if connection.vendor == "postgresql":
                cursor.execute(
                    "SELECT f.id, p.term, p.occurrences, p.length FROM unnest(%s::uuid[]) AS f(id) "
                    f"CROSS JOIN LATERAL (SELECT term, occurrences, length FROM {POSTINGS} "
                    "WHERE memory_id = f.id AND term = ANY(%s) OFFSET 0) AS p",
                    [list(memory_ids), list(terms)],
                )
                rows = cursor.fetchall()
            else:
                rows = []
                ids = list(memory_ids)
                for chunk in _chunks(ids, CHUNK - len(terms)):
                    cursor.execute(
                        f"SELECT memory_id, term, occurrences, length FROM {POSTINGS} "
                        "INDEXED BY keyword_posting_memory "
                        f"WHERE memory_id IN {_in(chunk)} AND term IN {_in(terms)}",
                        [*chunk, *terms],
                    )
                    rows.extend(cursor.fetchall())
            for memory_id, term, occurrences, length in rows:
                found[memory_id][term] = (occurrences, length)
        else:
            cursor.execute(
                f"SELECT memory_id, term, occurrences, length FROM {POSTINGS} "
                f"WHERE partition_id IN {_in(partition_ids)} AND term IN {_in(terms)}",
                [*partition_ids, *terms],
            )
            for memory_id, term, occurrences, length in cursor.fetchall():
                found[memory_id][term] = (occurrences, length)
    return found
