"""The processes of `python -m bench served --tenants` that work inside the database, started
as `python -m bench.tenants setup|timer`: the set-up (migrate, the end users with their
memories, one API key, the query texts, the database's size) and the timer (the exactness of
the service's nearest neighbours per user, and on PostgreSQL the HNSW search breadth sweep)."""

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np

KEY_NAME = "bench tenants"
EF_SEARCH_SWEEP = (40, 100, 200, 400)


def setup_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tenants setup")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--plan", required=True, help="JSON file: the planned users")
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    from django.db import connection

    from bench import bulk
    from bench.synthetic import embedded_corpus
    from memories.accounts.keys import api_key_create
    from memories.accounts.users import external_user_create
    from memories.embeddings.embedders import get_embedder

    planned = json.loads(Path(args.plan).read_text())
    embedder = get_embedder()
    corpus = embedded_corpus(embedder)
    queries = corpus.queries(args.queries)
    _, raw_key = api_key_create(name=KEY_NAME, scopes=["read", "write"])

    def batches():
        loaded = 0
        for i, user in enumerate(planned):
            owner = external_user_create(external_id=user["external_id"])
            items, vectors = corpus.memories(user["memories"], start=loaded)
            loaded += user["memories"]
            if i % 1000 == 0:
                print(f"set-up: user {i + 1:,} of {len(planned):,}", flush=True)
            yield owner, items, vectors

    load = bulk.load_users(batches(), model=embedder.model_name)
    Path(args.out).write_text(
        json.dumps(
            {
                "key": raw_key,
                "queries": queries,
                "load": load,
                "database": {**dj.database_info(), "bytes": _database_bytes(connection)},
            }
        )
    )


def finish_main(argv: list[str]) -> None:
    """A load whose rows are in but whose index build was cut short (a build that spilled out
    of maintenance_work_mem and crawled): build the index, vacuum, make the key and the
    queries, and write the set-up as `setup` would have. The rows' load time is then not
    known, and recorded as such."""
    parser = argparse.ArgumentParser(prog="python -m bench.tenants finish")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    from django.db import connection

    from bench import bulk
    from bench.synthetic import embedded_corpus
    from memories.accounts.keys import api_key_create
    from memories.embeddings.embedders import get_embedder
    from memories.models import Memory

    embedder = get_embedder()
    corpus = embedded_corpus(embedder)
    queries = corpus.queries(args.queries)  # as setup drew them, first
    _, raw_key = api_key_create(name=KEY_NAME + " (finished)", scopes=["read", "write"])
    rows = Memory.objects.count()
    started = time.perf_counter()
    graphs = bulk.index_build()
    load = {
        "rows": rows,
        "rows_seconds": None,
        "index_seconds": round(time.perf_counter() - started, 1),
        "partition_graphs": graphs,
    }
    Path(args.out).write_text(
        json.dumps(
            {
                "key": raw_key,
                "queries": queries,
                "load": load,
                "database": {**dj.database_info(), "bytes": _database_bytes(connection)},
            }
        )
    )


def _database_bytes(connection) -> int:
    """The database's size on disk: PostgreSQL's pg_database_size (tables, indexes, TOAST);
    SQLite's file with its write-ahead log, checkpointed first."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_database_size(current_database())")
            return int(cursor.fetchone()[0])
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        name = Path(connection.settings_dict["NAME"])
    wal = name.with_name(name.name + "-wal")
    return name.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def timer_main(argv: list[str]) -> None:
    """Reads JSON requests from stdin, one a line; answers one JSON line each:
    {"exact": [[external_id, query index], ...]} -> shares of the exact nearest found;
    {"sweep": [[external_id, query index], ...]} -> per ef_search, share found and KNN time;
    {"database": true} -> the database as timed (its settings and size, after the migrations
    this process ran: a prepared database may have been loaded by older code);
    {"blocks": true} -> PostgreSQL: the database's blocks read from outside shared_buffers
    and found in them so far ({"read": n, "hit": n}); SQLite: null."""
    parser = argparse.ArgumentParser(prog="python -m bench.tenants timer")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--queries", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    from django.db import connection

    from memories.embeddings.embedders import get_embedder

    queries = json.loads(Path(args.queries).read_text())
    vectors = get_embedder().embed_queries(queries)
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "exact" in request:
            answer = [_found_share(user, vectors[index]) for user, index in request["exact"]]
        elif "database" in request:
            answer = {**dj.database_info(), "bytes": _database_bytes(connection)}
        elif "blocks" in request:
            answer = _block_counts(connection)
        else:
            answer = _sweep([(user, vectors[index]) for user, index in request["sweep"]])
        print(json.dumps(answer), flush=True)


def _block_counts(connection) -> dict | None:
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = current_database()"
        )
        read, hit = cursor.fetchone()
    return {"read": int(read), "hit": int(hit)}


def _nearest(external_id: str, vector, *, exact: bool) -> list:
    """The user's nearest RECALL_CANDIDATES as the service finds them (outside a transaction:
    SQLite's in-process mirror, PostgreSQL's plan) or by an exact scan (SQLite: sqlite-vec
    inside a transaction; PostgreSQL: the same statement with index scans off)."""
    from django.conf import settings
    from django.db import connection, transaction

    from memories.models import Status
    from memories.recall.vector_store import get_vector_store

    partitions = _partitions(external_id)
    store = get_vector_store()
    k = settings.RECALL_CANDIDATES
    if not exact:
        return store.nearest(vector=vector, partitions=partitions, k=k, status=Status.ACTIVE)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_indexscan = off")
        return store.nearest(vector=vector, partitions=partitions, k=k, status=Status.ACTIVE)


@functools.cache
def _partitions(external_id: str) -> list[str]:
    from memories.models import User
    from memories.recall.scopes import recall_scopes

    user = User.objects.get(external_id=external_id)
    return [scope.partition for scope in recall_scopes(user=user)]


def _found_share(external_id: str, vector) -> float:
    wanted = {n.memory_id for n in _nearest(external_id, vector, exact=True)}
    served = {n.memory_id for n in _nearest(external_id, vector, exact=False)}
    return len(wanted & served) / max(1, len(wanted))


def _sweep(pairs: list) -> list[dict]:
    """PostgreSQL: the share of the exact nearest found and the KNN time at each ef_search
    (hnsw.ef_search, the breadth of the HNSW search) for these users and queries."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return []
    exact = [{n.memory_id for n in _nearest(user, v, exact=True)} for user, v in pairs]
    out = []
    for ef_search in EF_SEARCH_SWEEP:
        with connection.cursor() as cursor:
            cursor.execute(f"SET hnsw.ef_search = {int(ef_search)}")
        shares, seconds = [], []
        for (user, vector), wanted in zip(pairs, exact, strict=True):
            started = time.perf_counter()
            served = {n.memory_id for n in _nearest(user, vector, exact=False)}
            seconds.append(time.perf_counter() - started)
            shares.append(len(wanted & served) / max(1, len(wanted)))
        out.append(
            {
                "ef_search": ef_search,
                "found": round(float(np.mean(shares)), 4),
                "lowest": round(float(np.min(shares)), 4),
                "knn_p50_ms": round(float(np.percentile(seconds, 50)) * 1000, 2),
                "knn_p95_ms": round(float(np.percentile(seconds, 95)) * 1000, 2),
            }
        )
    with connection.cursor() as cursor:
        cursor.execute("RESET hnsw.ef_search")
    return out
