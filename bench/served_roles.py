"""The two processes of `python -m bench served` that work inside the database, started as
`python -m bench.served setup|timer`: the set-up (migrate, the user with its memories, an API
key, the query texts) and the timer (bare KNN and query embedding, and the exactness of the
service's nearest neighbours)."""

import argparse
import json
import sys
import time
from pathlib import Path

EXTERNAL_ID = "bench-served"


def setup_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.served setup")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--memories", type=int, required=True)
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--ingest", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)

    from bench import bulk
    from bench.synthetic import embedded_corpus
    from memories.accounts.keys import api_key_create
    from memories.accounts.users import external_user_create
    from memories.embeddings.embedders import get_embedder

    embedder = get_embedder()
    corpus = embedded_corpus(embedder)
    queries = corpus.queries(args.queries)
    user = external_user_create(external_id=EXTERNAL_ID)
    _, raw_key = api_key_create(name="bench served", scopes=["read", "write"])
    items, vectors = corpus.memories(args.memories)
    load = bulk.load(user, items, vectors, model=embedder.model_name)
    _label_apps(user)
    # Texts for the write timings, keyed apart from the loaded ones.
    ingest, _ = corpus.memories(args.ingest, start=args.memories)
    Path(args.out).write_text(
        json.dumps(
            {
                "key": raw_key,
                "queries": queries,
                "ingest": [(f"ingest-{key}", value) for key, value in ingest],
                "load": load,
                "database": dj.database_info(),
            }
        )
    )


# Metadata of the loaded memories (issue 46): one in FILTERED_EVERY holds the app a filtered
# search asks for; the others one of the common apps (or none).
FILTERED_APP = "watch"
FILTERED_EVERY = 100
COMMON_APPS = ("ios", "android", "web", None)


def _label_apps(user) -> None:
    """Give the user's memories their `metadata.app`: 1% FILTERED_APP, by id order."""
    from django.db import transaction

    from memories.models import Memory

    ids = list(Memory.objects.filter(user=user).order_by("id").values_list("id", flat=True))
    groups: dict[str | None, list] = {}
    for i, memory_id in enumerate(ids):
        app = FILTERED_APP if i % FILTERED_EVERY == 0 else COMMON_APPS[i % len(COMMON_APPS)]
        groups.setdefault(app, []).append(memory_id)
    with transaction.atomic():
        for app, members in groups.items():
            if app is None:
                continue
            for start in range(0, len(members), 5000):
                Memory.objects.filter(id__in=members[start : start + 5000]).update(
                    metadata={"app": app}
                )


def timer_main(argv: list[str]) -> None:
    """Reads query indices from stdin, one a line; answers {"knn": s, "embed": s} lines."""
    parser = argparse.ArgumentParser(prog="python -m bench.served timer")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--queries", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    from django.conf import settings

    from memories.embeddings.embedders import get_embedder
    from memories.models import Status, User
    from memories.recall.scopes import recall_scopes
    from memories.recall.vector_store import get_vector_store

    queries = json.loads(Path(args.queries).read_text())
    embedder = get_embedder()
    vectors = embedder.embed_queries(queries)
    user = User.objects.get(external_id=EXTERNAL_ID)
    partitions = [scope.partition for scope in recall_scopes(user=user)]
    store = get_vector_store()
    k = settings.RECALL_CANDIDATES
    print("ready", flush=True)
    for line in sys.stdin:
        if line.startswith("exact "):
            print(json.dumps(_exactness(store, vectors, partitions, k, int(line.split()[1]))))
            sys.stdout.flush()
            continue
        index = int(line)
        started = time.perf_counter()
        store.nearest(vector=vectors[index], partitions=partitions, k=k, status=Status.ACTIVE)
        knn = time.perf_counter() - started
        started = time.perf_counter()
        embedder.embed_queries([queries[index]])
        embed = time.perf_counter() - started
        print(json.dumps({"knn": knn, "embed": embed}), flush=True)


def _exactness(store, vectors, partitions, k: int, queries: int) -> dict:
    """The service's nearest k (outside a transaction: SQLite's mirror, PostgreSQL's HNSW
    index) against an exact scan (SQLite: sqlite-vec, which the store asks inside a
    transaction; PostgreSQL: the same statement with index scans off)."""
    from django.db import connection, transaction

    from memories.models import Status

    found = []
    for vector in vectors[:queries]:
        served = store.nearest(vector=vector, partitions=partitions, k=k, status=Status.ACTIVE)
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL enable_indexscan = off")
            exact = store.nearest(vector=vector, partitions=partitions, k=k, status=Status.ACTIVE)
        wanted = {n.memory_id for n in exact}
        found.append(len(wanted & {n.memory_id for n in served}) / max(1, len(wanted)))
    return {
        "queries": len(found),
        "k": k,
        "recall_of_exact": round(sum(found) / len(found), 4),
        "lowest": round(min(found), 4),
        "served_by": "in-process mirror" if connection.vendor == "sqlite" else "HNSW index",
    }
