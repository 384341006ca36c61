"""PostgreSQL: an HNSW graph of its own for each partition with many vectors.

The global graph (memory_embedding_hnsw_<d>) holds every user's vectors. A search of one
user walks it filtered to that user's partition: for a user with few memories the planner
scans their rows exactly instead (B-tree on partition), but for a user with tens of thousands
among a million the filtered walk visits mostly other users' vectors and comes back with
a third of the exact nearest (docs/benchmarks.md, "Many users"). A partial index per large
partition (`WHERE dimensions = d AND partition = '<p>'`) is a graph of that user's vectors
alone; nearest_sql names each partition by equality, so the planner matches it.

`partition_index_plan` decides (a plain function of counts and names); `partition_indexes_sync`
reads the counts, builds and drops (memories.tasks runs it every
RECALL_PARTITION_INDEX_INTERVAL_SECONDS). Hysteresis: a partition gets its graph at
RECALL_PARTITION_INDEX_MIN_MEMORIES vectors and loses it below half of that, so a user near
the line does not have theirs built and dropped in turn."""

import hashlib
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection
from psycopg import sql as psql

from memories.models import MemoryEmbedding

logger = logging.getLogger(__name__)

TABLE = MemoryEmbedding._meta.db_table
NAME_PREFIX = "memory_embedding_hnsw_"
# The graph's build: on the benchmark's first synthetic memories (noise 0.6, an intrinsic
# dimensionality four times real text's), pgvector's defaults (m 16, ef_construction 64)
# found 0.58 of a heavy user's exact nearest 50 at ef_search 40, m 32 / ef_construction 200
# 0.81 at the same search time, for a build some 3 times as long (38 s for 20,000 vectors on
# one core). On memories calibrated to real text (bench/synthetic_noise.py), `bench graphs`
# at 100,000 memories: m 32 / ef_construction 200 finds 0.985, 100 finds 0.981, 64 0.977,
# m 16 / 64 0.959; the price is every write's insert into the graph, ~12 ms of a core per
# memory at 200 against 10 at 100 and 7 at 64 (docs/benchmarks.md, "A heavy user's HNSW
# graph"). Recall is every turn, a write once: the build stays the one that finds most.
GRAPH_M = 32
GRAPH_EF_CONSTRUCTION = 200
# Any number fits: one sync at a time per database (two would race on the index names).
ADVISORY_LOCK = 0x6D656D7069  # "mempi"


def partition_index_name(partition: str, dimensions: int) -> str:
    """The partial index of one partition: a digest, since partitions run to 120 characters
    and PostgreSQL's names stop at 63."""
    digest = hashlib.sha1(f"{int(dimensions)}:{partition}".encode()).hexdigest()[:16]
    return f"{NAME_PREFIX}{int(dimensions)}_p{digest}"


def is_partition_index_name(name: str) -> bool:
    rest = name.removeprefix(NAME_PREFIX)
    return rest != name and "_p" in rest


@dataclass
class PartitionIndexPlan:
    create: list[tuple[str, int]] = field(default_factory=list)  # (partition, dimensions)
    drop: list[str] = field(default_factory=list)  # index names


def partition_index_plan(
    counts: dict[tuple[str, int], int], existing: dict[str, bool], *, min_memories: int
) -> PartitionIndexPlan:
    """What to build and drop. `counts`: vectors per (partition, dimensions), at least those
    with min_memories // 2 or more; `existing`: the partition indexes there are, by name, and
    whether each is valid (a build that was cut short leaves an invalid one, rebuilt here)."""
    plan = PartitionIndexPlan()
    keep = {
        partition_index_name(partition, dimensions)
        for (partition, dimensions), count in counts.items()
        if count >= min_memories // 2
    }
    for name, valid in sorted(existing.items()):
        if name not in keep or not valid:
            plan.drop.append(name)
    for (partition, dimensions), count in sorted(counts.items()):
        name = partition_index_name(partition, dimensions)
        wanted = count >= min_memories or (name in existing and count >= min_memories // 2)
        if wanted and (name not in existing or not existing[name]):
            plan.create.append((partition, dimensions))
    return plan


def create_partition_index_sql(
    partition: str,
    dimensions: int,
    *,
    concurrently: bool,
    m: int = GRAPH_M,
    ef_construction: int = GRAPH_EF_CONSTRUCTION,
) -> str:
    """The graph's build; m and ef_construction are the service's own unless a benchmark
    compares others (bench/graphs.py)."""
    d = int(dimensions)
    statement = psql.SQL(
        "CREATE INDEX {how} IF NOT EXISTS {name} ON {table} USING hnsw "
        "((vector::vector({d})) vector_cosine_ops) WITH (m = {m}, ef_construction = {efc}) "
        "WHERE dimensions = {d} AND partition = {p}"
    ).format(
        how=psql.SQL("CONCURRENTLY" if concurrently else ""),
        name=psql.Identifier(partition_index_name(partition, d)),
        table=psql.Identifier(TABLE),
        d=psql.Literal(d),
        m=psql.Literal(int(m)),
        efc=psql.Literal(int(ef_construction)),
        p=psql.Literal(partition),
    )
    connection.ensure_connection()
    return statement.as_string(connection.connection)


def partition_indexes_sync(*, min_memories: int | None = None) -> dict:
    """Build the graphs of partitions that have grown, drop those of partitions that have
    shrunk. Outside a transaction the builds are CONCURRENTLY (searches and saves go on
    meanwhile); inside one (tests, a management shell in atomic) they are plain. Returns what
    it did; does nothing on a database other than PostgreSQL, or while another sync runs."""
    if connection.vendor != "postgresql":
        return {"created": [], "dropped": [], "skipped": "not PostgreSQL"}
    if min_memories is None:
        min_memories = settings.RECALL_PARTITION_INDEX_MIN_MEMORIES
    concurrently = not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_LOCK])
        if not cursor.fetchone()[0]:
            return {"created": [], "dropped": [], "skipped": "another sync is running"}
        try:
            return _sync(cursor, min_memories=min_memories, concurrently=concurrently)
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK])


def _sync(cursor, *, min_memories: int, concurrently: bool) -> dict:
    cursor.execute(
        f"SELECT partition, dimensions, count(*) FROM {TABLE} WHERE vector IS NOT NULL "
        "GROUP BY partition, dimensions HAVING count(*) >= %s",
        [max(1, min_memories // 2)],
    )
    counts = {(row[0], int(row[1])): int(row[2]) for row in cursor.fetchall()}
    cursor.execute(
        "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = %s::regclass AND c.relname LIKE %s",
        [TABLE, NAME_PREFIX.replace("_", r"\_") + "%"],
    )
    existing = {name: valid for name, valid in cursor.fetchall() if is_partition_index_name(name)}
    plan = partition_index_plan(counts, existing, min_memories=min_memories)
    how = "CONCURRENTLY " if concurrently else ""
    if plan.create and not concurrently:
        # A plain CREATE INDEX fails in a transaction with deferred constraint checks
        # pending (rows just written): check them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for name in plan.drop:
        drop = psql.SQL("DROP INDEX {how} IF EXISTS {name}").format(
            how=psql.SQL(how), name=psql.Identifier(name)
        )
        cursor.execute(drop.as_string(connection.connection))
    created = []
    for partition, dimensions in plan.create:
        count = counts[(partition, dimensions)]
        # The graph is built fast while it fits in maintenance_work_mem (the vector and its
        # neighbour lists, with room to spare), far slower once it spills.
        memory_mb = max(64, count * (dimensions * 4 + GRAPH_M * 16) * 2 // 2**20)
        cursor.execute(f"SET maintenance_work_mem = '{memory_mb}MB'")
        started = time.perf_counter()
        try:
            cursor.execute(
                create_partition_index_sql(partition, dimensions, concurrently=concurrently)
            )
        finally:
            cursor.execute("RESET maintenance_work_mem")
        seconds = round(time.perf_counter() - started, 1)
        logger.info("partition index %s: %s vectors in %s s", partition, count, seconds)
        created.append({"partition": partition, "vectors": count, "seconds": seconds})
    return {"created": created, "dropped": plan.drop}
