"""An in-process copy of the active vectors of the partitions a process searches, kept in step
with the sqlite-vec table through a change log, and searched exactly with one matrix product.

Why: sqlite-vec scans a partition's vectors one by one (~75 ms for 100,000 of 384 floats on
this project's machine, int8 columns slower still, bit columns ~22 ms but losing a tenth of
the exact top 50); numpy multiplies the same 100,000 vectors in ~10-20 ms. Below
QUANTIZED_MIN_ROWS the answer is the same exact search, not an approximation; from there
the candidates are picked by an 8-bit product first (sqlite_quantized) and scored exactly.

How it stays right:
- Every vector write (save, save_many, delete, set_status, prepare) appends a row to the change
  log CHANGES (seq, partition, memory_id) inside the writer's transaction, so the log commits
  or rolls back with the vectors.
- Before a search a mirror reads the log rows of its partition after the last one it applied
  and re-reads those memories' current rows from sqlite-vec (a re-read is idempotent, so an
  overlap between what it read and what it applies is harmless).
- It checks that the last row it applied is still there with the same memory: a log row that
  was rolled back, and a seq number given again after that, make it load the partition anew.
- A row of partition "*" (prepare(): a new table, another model) makes every mirror reload.
- Only outside a transaction: inside one a mirror would take in writes that may still roll
  back, so searches there go to sqlite-vec (tests in a transaction, writes that search).

Each process holds at most VECTOR_MIRROR_MB of vectors; the least recently searched partitions
go first, and a partition larger than the whole budget is searched by sqlite-vec."""

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from django.conf import settings
from django.db import connection

from memories.models import MemoryEmbedding, Status
from memories.recall.vector_store.sqlite_lookups import point_lookups
from memories.recall.vector_store.sqlite_quantized import QuantizedRows

logger = logging.getLogger(__name__)

CHANGES = "vec_memory_changes"
ALL_PARTITIONS = "*"
# Past this many changed memories at once, reading the partition whole is quicker than
# looking each one up.
RELOAD_AFTER_CHANGES = 2000
# A point lookup of one vec0 row costs about this many rows of a partition scan.
POINT_READ_COST = 10
TOO_LARGE_RECHECK_SECONDS = 600
# A partition of this many vectors or more picks its candidates by an 8-bit product first
# (sqlite_quantized: ~5 times faster at 100,000), then scores this many of them exactly.
QUANTIZED_MIN_ROWS = 20_000
QUANTIZED_CANDIDATES = 1000


def create_changes_sql() -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {CHANGES} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "partition TEXT NOT NULL, memory_id TEXT)",
        f"CREATE INDEX IF NOT EXISTS {CHANGES}_partition_seq ON {CHANGES} (partition, seq)",
    ]


def log_changes(cursor, rows: Iterable[tuple[str, str | None]]) -> None:
    """Append (partition, memory id hex) rows to the change log (inside the write)."""
    cursor.executemany(
        f"INSERT INTO {CHANGES}(partition, memory_id) VALUES (%s, %s)", [list(r) for r in rows]
    )


def forget(*, memory_ids: Sequence[str], reload_all: bool = True) -> None:
    """Erasure: delete the log rows of these memories and of their partitions, then (unless
    not `reload_all`) log a change of every partition (mirrors reload, and drop the erased
    vectors)."""
    with connection.cursor() as cursor:
        partitions: set[str] = set()
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"SELECT DISTINCT partition FROM {CHANGES} WHERE memory_id IN ({marks})", chunk
            )
            partitions.update(row[0] for row in cursor.fetchall())
            cursor.execute(f"DELETE FROM {CHANGES} WHERE memory_id IN ({marks})", chunk)
        partitions.discard(ALL_PARTITIONS)
        cursor.executemany(
            f"DELETE FROM {CHANGES} WHERE partition = %s", [[p] for p in sorted(partitions)]
        )
        if reload_all:
            log_changes(cursor, [(ALL_PARTITIONS, None)])


class PartitionMirror:
    """The active vectors of one partition: unit rows of `matrix[:size]`, `ids[i]` the memory
    id (hex) of row i. `applied` is the (seq, memory id) of the last log row taken in."""

    def __init__(self, dimensions: int) -> None:
        self.matrix = np.zeros((0, dimensions), dtype=np.float32)
        self.size = 0
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self.applied: tuple[int, str | None] = (0, None)
        self.quantized: QuantizedRows | None = None
        self.lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self.matrix.nbytes + (self.quantized.nbytes if self.quantized else 0)

    def replace_all(self, ids: list[str], vectors: np.ndarray) -> None:
        self.quantized = None
        self.matrix = _unit_rows(vectors)
        self.size = len(ids)
        self.ids = list(ids)
        self.rows = {memory_id: i for i, memory_id in enumerate(self.ids)}

    def put(self, memory_id: str, vector: np.ndarray) -> None:
        row = self.rows.get(memory_id)
        if row is None:
            if self.size == len(self.matrix):
                grown = np.zeros((max(16, self.size * 3 // 2), self.matrix.shape[1]), np.float32)
                grown[: self.size] = self.matrix[: self.size]
                self.matrix = grown
            row = self.size
            self.size += 1
            self.ids.append(memory_id)
            self.rows[memory_id] = row
        self.matrix[row] = _unit_rows(vector[np.newaxis, :])[0]
        if self.quantized is not None:
            self.quantized.put(row, self.matrix[row], capacity=len(self.matrix))

    def remove(self, memory_id: str) -> None:
        row = self.rows.pop(memory_id, None)
        if row is None:
            return
        last = self.size - 1
        if row != last:  # the last row takes the freed place
            moved = self.ids[last]
            self.matrix[row] = self.matrix[last]
            self.ids[row] = moved
            self.rows[moved] = row
            if self.quantized is not None:
                self.quantized.move(last, row)
        elif self.quantized is not None:
            self.quantized.clear(last)
        self.ids.pop()
        self.size = last

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """(memory id, cosine distance) of the k nearest rows, nearest first."""
        if self.size == 0 or k <= 0:
            return []
        if self.size >= QUANTIZED_MIN_ROWS and k < self.size:
            return self._nearest_quantized(query, k)
        similarities = self.matrix[: self.size] @ query
        if k < self.size:
            top = np.argpartition(-similarities, k - 1)[:k]
        else:
            top = np.arange(self.size)
        top = top[np.argsort(-similarities[top], kind="stable")]
        return [(self.ids[i], 1.0 - float(similarities[i])) for i in top]

    def _nearest_quantized(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        if self.quantized is None or self.quantized.stale(self.size):
            self.quantized = QuantizedRows(self.matrix, self.size)
        count = max(QUANTIZED_CANDIDATES, 20 * k)
        picked = self.quantized.candidates(query, self.size, count)
        similarities = self.matrix[picked] @ query
        order = np.argsort(-similarities, kind="stable")[:k]
        return [(self.ids[picked[i]], 1.0 - float(similarities[i])) for i in order]

    def distances(self, query: np.ndarray, memory_ids: Iterable[str]) -> list[tuple[str, float]]:
        rows = [
            (memory_id, self.rows[memory_id]) for memory_id in memory_ids if memory_id in self.rows
        ]
        if not rows:
            return []
        similarities = self.matrix[[row for _, row in rows]] @ query
        return [
            (memory_id, 1.0 - float(s))
            for (memory_id, _), s in zip(rows, similarities, strict=True)
        ]


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class Mirrors:
    """The mirrors of one process, by (database, partition), least recently searched first."""

    def __init__(self) -> None:
        self._mirrors: OrderedDict[tuple[str, str], PartitionMirror] = OrderedDict()
        self._lock = threading.Lock()
        # Partitions too large for the budget, and when they were found so: looked at again
        # after TOO_LARGE_RECHECK_SECONDS (they may have shrunk, or the budget grown).
        self._too_large: dict[tuple[str, str], float] = {}

    def clear(self) -> None:
        with self._lock:
            self._mirrors.clear()
            self._too_large.clear()

    def usable(self) -> bool:
        """Mirrors serve searches outside transactions, when the budget allows any."""
        return settings.VECTOR_MIRROR_MB > 0 and not connection.in_atomic_block

    @contextmanager
    def searched(
        self, *, table: str, partition: str, dimensions: int
    ) -> Iterator[PartitionMirror | None]:
        """`with mirrors.searched(...) as mirror:` the partition's mirror brought up to date
        and held for this search alone; None when the partition is too large for the budget."""
        mirror = self._current(table=table, partition=partition, dimensions=dimensions)
        try:
            yield mirror
        finally:
            if mirror is not None:
                mirror.lock.release()

    def _current(self, *, table: str, partition: str, dimensions: int) -> PartitionMirror | None:
        """The mirror up to date and locked, or None (and unlocked)."""
        key = (str(connection.settings_dict["NAME"]), partition)
        budget = settings.VECTOR_MIRROR_MB * 1024 * 1024
        with self._lock:
            refused = self._too_large.get(key)
            if refused is not None and time.monotonic() - refused < TOO_LARGE_RECHECK_SECONDS:
                return None
            mirror = self._mirrors.get(key)
            if mirror is None or mirror.matrix.shape[1] != dimensions:
                mirror = self._mirrors[key] = PartitionMirror(dimensions)
                mirror.applied = (-1, None)  # never loaded
            self._mirrors.move_to_end(key)
        mirror.lock.acquire()
        try:
            _refresh(mirror, table=table, partition=partition, budget=budget)
        except PartitionTooLarge as too_large:
            mirror.lock.release()
            self._refuse(key, vectors=too_large.vectors)
            return None
        except BaseException:
            mirror.lock.release()
            raise
        if mirror.size * dimensions * 4 > budget:  # grew past the budget since it was loaded
            mirror.lock.release()
            self._refuse(key, vectors=mirror.size)
            return None
        self._evict(budget, keep=key)
        return mirror

    def _refuse(self, key: tuple[str, str], *, vectors: int) -> None:
        with self._lock:
            self._mirrors.pop(key, None)
            if key not in self._too_large:
                logger.info(
                    "a partition of %d vectors is larger than VECTOR_MIRROR_MB (%d): "
                    "searched by sqlite-vec",
                    vectors,
                    settings.VECTOR_MIRROR_MB,
                )
            self._too_large[key] = time.monotonic()

    def _evict(self, budget: int, *, keep: tuple[str, str]) -> None:
        with self._lock:
            total = sum(m.nbytes for m in self._mirrors.values())
            for key in list(self._mirrors):
                if total <= budget:
                    break
                if key != keep:
                    total -= self._mirrors.pop(key).nbytes


class PartitionTooLarge(Exception):
    def __init__(self, vectors: int) -> None:
        super().__init__(vectors)
        self.vectors = vectors


def _refresh(mirror: PartitionMirror, *, table: str, partition: str, budget: int) -> None:
    applied_seq, applied_id = mirror.applied
    with connection.cursor() as cursor:
        if applied_seq >= 0:
            cursor.execute(
                f"SELECT seq, partition, memory_id FROM {CHANGES} "
                "WHERE partition IN (%s, %s) AND seq >= %s ORDER BY seq",
                [partition, ALL_PARTITIONS, applied_seq],
            )
            rows = cursor.fetchall()
            if applied_seq > 0:
                # The last row taken in must still be there: else it was rolled back (and its
                # seq may have been given to another row since).
                if not rows or rows[0][0] != applied_seq or rows[0][2] != applied_id:
                    rows = None
                else:
                    rows = rows[1:]
            if rows is not None and not any(row[1] == ALL_PARTITIONS for row in rows):
                changed = list(dict.fromkeys(row[2] for row in rows))
                if len(changed) <= RELOAD_AFTER_CHANGES:
                    if changed:
                        _apply(mirror, cursor, table=table, partition=partition, ids=changed)
                        mirror.applied = (rows[-1][0], rows[-1][2])
                    return
        _load(mirror, cursor, table=table, partition=partition, budget=budget)


def _load(mirror: PartitionMirror, cursor, *, table: str, partition: str, budget: int) -> None:
    """Read the partition's active vectors whole; raises PartitionTooLarge, before reading
    them, when they would not fit the budget."""
    cursor.execute(
        f"SELECT count(*) FROM {MemoryEmbedding._meta.db_table} "
        "WHERE partition = %s AND status = %s",
        [partition, Status.ACTIVE],
    )
    [vectors] = cursor.fetchone()
    if vectors * mirror.matrix.shape[1] * 4 > budget:
        raise PartitionTooLarge(vectors)
    # The log position first: a write committed between the two reads is in the vectors
    # read and is applied again (idempotently) by the next refresh.
    cursor.execute(
        f"SELECT seq, memory_id FROM {CHANGES} WHERE partition IN (%s, %s) "
        "ORDER BY seq DESC LIMIT 1",
        [partition, ALL_PARTITIONS],
    )
    last = cursor.fetchone()
    fetched = _partition_rows(cursor, table=table, partition=partition, vectors=vectors)
    dimensions = mirror.matrix.shape[1]
    vectors = np.frombuffer(b"".join(row[1] for row in fetched), dtype=np.float32)
    mirror.replace_all([row[0] for row in fetched], vectors.reshape(-1, dimensions))
    mirror.applied = (last[0], last[1]) if last else (0, None)


def _partition_rows(cursor, *, table: str, partition: str, vectors: int) -> list[tuple]:
    """(memory id, vector bytes) of the partition's active vectors. vec0 answers a query on
    its partition column with a scan of every partition (some 2.5 µs a stored vector: 0.25 s
    at 100,000), but a memory's row by its primary key (some 25 µs): a partition small next to
    the table, a light user's, is read row by row, by the ids its embeddings list."""
    cursor.execute(f"SELECT count(*) FROM {MemoryEmbedding._meta.db_table}")
    [stored] = cursor.fetchone()
    if vectors * POINT_READ_COST >= stored:
        cursor.execute(
            f"SELECT memory_id, embedding FROM {table} WHERE partition = %s AND status = %s",
            [partition, Status.ACTIVE],
        )
        return cursor.fetchall()
    cursor.execute(
        f"SELECT memory_id FROM {MemoryEmbedding._meta.db_table} "
        "WHERE partition = %s AND status = %s",
        [partition, Status.ACTIVE],
    )
    # Raw rows: the ids as SQLite keeps them, 32 hex digits, as vec0's memory_id column.
    rows = point_lookups(
        f"SELECT memory_id, embedding, partition, status FROM {table} WHERE memory_id = %s",
        cursor.fetchall(),
        cursor=cursor,
    )
    return [
        (memory_id, embedding)
        for memory_id, embedding, row_partition, status in rows
        if row_partition == partition and status == Status.ACTIVE
    ]


def _apply(mirror: PartitionMirror, cursor, *, table: str, partition: str, ids: Sequence[str]):
    current = {
        memory_id: (row_partition, status, embedding)
        for memory_id, row_partition, status, embedding in point_lookups(
            f"SELECT memory_id, partition, status, embedding FROM {table} WHERE memory_id = %s",
            [(memory_id,) for memory_id in ids],
            cursor=cursor,
        )
    }
    for memory_id in ids:
        row = current.get(memory_id)
        if row is not None and row[0] == partition and row[1] == Status.ACTIVE:
            mirror.put(memory_id, np.frombuffer(row[2], dtype=np.float32))
        else:
            mirror.remove(memory_id)


mirrors = Mirrors()
