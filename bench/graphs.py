"""`python -m bench graphs`: how a heavy user's HNSW graph is built, on PostgreSQL, traded
between what a search finds and what every write pays.

One user's partition of synthetic memories (bench/synthetic.py, calibrated to the default
embedder) gets its graph built with each (m, ef_construction) in turn, as partition_indexes
builds it. Per build: the build time and size; per hnsw.ef_search, the share of the exact
nearest RECALL_CANDIDATES that the vector store's search finds and its time; and the time to
write WRITE_BATCHES batches of WRITE_BATCH memories with their vectors into the partition
(memory rows, vectors, keyword postings, one transaction per batch, as a batch create writes
them), against the same writes with no graph. The written memories are deleted after each
build, with the graph dropped first, so every build sees the same partition."""

import time

import numpy as np

WRITE_BATCH = 100
WRITE_BATCHES = 5
BUILDS = ((32, 200), (32, 100), (32, 64), (16, 64))
EF_SEARCHES = (40, 100)


def run(*, memories: int, queries: int, builds=BUILDS, ef_searches=EF_SEARCHES) -> dict:
    """The comparison on synthetic memories of the default embedder."""
    from bench.synthetic import embedded_corpus
    from memories.embeddings.embedders import get_embedder

    embedder = get_embedder()
    corpus = embedded_corpus(embedder)
    items, vectors = corpus.memories(memories + WRITE_BATCH * WRITE_BATCHES)
    query_vectors = np.asarray(embedder.embed_queries(corpus.queries(queries)), dtype=np.float32)
    return time_builds(
        items=items,
        vectors=vectors,
        query_vectors=query_vectors,
        memories=memories,
        model=embedder.model_name,
        builds=builds,
        ef_searches=ef_searches,
    )


def time_builds(
    *,
    items: list[tuple[str, str]],
    vectors: np.ndarray,
    query_vectors: np.ndarray,
    memories: int,
    model: str,
    builds=BUILDS,
    ef_searches=EF_SEARCHES,
) -> dict:
    """The first `memories` of items/vectors (keys `syn-<row>`) are the partition; the
    WRITE_BATCH * WRITE_BATCHES after them are the timed writes."""
    from django.conf import settings
    from django.db import connection

    from bench import bulk
    from memories.models import Scope, User
    from memories.recall.vector_store import partition_key
    from memories.recall.vector_store.partition_indexes import GRAPH_EF_CONSTRUCTION, GRAPH_M

    if connection.vendor != "postgresql":
        raise SystemExit("bench graphs times PostgreSQL's HNSW graphs: run it with --db postgresql")
    if len(items) < memories + WRITE_BATCH * WRITE_BATCHES:
        raise ValueError("items holds the partition's memories and the writes' after them")
    user = User.objects.create_user(username="bench-graphs")
    partition = partition_key(scope=Scope.USER, user_id=user.id)
    started = time.perf_counter()
    bulk._insert(user, items[:memories], vectors[:memories], model=model)
    _sql("VACUUM (ANALYZE)")
    load_seconds = time.perf_counter() - started

    k = settings.RECALL_CANDIDATES
    exact = [
        set(np.argsort(1.0 - vectors[:memories] @ q, kind="stable")[:k]) for q in query_vectors
    ]
    ids = _memory_ids(user)
    extra = (items[memories:], vectors[memories:])
    without_graph, written = _writes(user, *extra, model=model)
    _delete(written)
    result = {
        "service_build": {
            "m": GRAPH_M,
            "ef_construction": GRAPH_EF_CONSTRUCTION,
            "ef_search": settings.RECALL_HNSW_EF_SEARCH,
        },
        "memories": memories,
        "queries": len(query_vectors),
        "k": k,
        "load_seconds": round(load_seconds, 1),
        "write_batch": WRITE_BATCH,
        "write_without_graph": without_graph,
        "builds": [],
    }
    try:
        for m, ef_construction in builds:
            build = _build(partition, vectors.shape[1], m, ef_construction)
            build["searches"] = [
                _searches(partition, query_vectors, exact, ids, ef_search=ef, k=k)
                for ef in ef_searches
            ]
            build["write"], written = _writes(user, *extra, model=model)
            # Dropped before the deletes, which would leave dead entries in it.
            _sql(f'DROP INDEX "{build.pop("name")}"')
            _delete(written)
            result["builds"].append(build)
            print(f"graphs: m {m}, ef_construction {ef_construction}: {build}", flush=True)
    finally:
        _sql(f"SET hnsw.ef_search = {int(settings.RECALL_HNSW_EF_SEARCH)}")
    return result


def _sql(statement: str, params=None) -> list:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def _memory_ids(user) -> dict:
    """The row number of each loaded memory (its index in the corpus) by id."""
    from memories.models import Memory

    return {
        memory_id: int(key.removeprefix("syn-"))
        for memory_id, key in Memory.objects.filter(user=user).values_list("id", "key")
    }


def _build(partition: str, dimensions: int, m: int, ef_construction: int) -> dict:
    from memories.recall.vector_store.partition_indexes import (
        create_partition_index_sql,
        partition_index_name,
    )

    name = partition_index_name(partition, dimensions)
    _sql("SET maintenance_work_mem = '1GB'")
    started = time.perf_counter()
    _sql(
        create_partition_index_sql(
            partition, dimensions, concurrently=False, m=m, ef_construction=ef_construction
        )
    )
    seconds = time.perf_counter() - started
    _sql("RESET maintenance_work_mem")
    size = _sql("SELECT pg_relation_size(%s::regclass)", [name])[0][0]
    return {
        "m": m,
        "ef_construction": ef_construction,
        "name": name,
        "build_seconds": round(seconds, 1),
        "graph_mb": round(size / 2**20, 1),
    }


def _writes(user, items, vectors, *, model: str) -> tuple[dict, list]:
    """WRITE_BATCHES batches of WRITE_BATCH memories written, one transaction each: their
    times, and the ids written."""
    from django.db import transaction

    from bench import bulk
    from bench.metrics import latency_summary
    from memories.models import Memory
    from memories.recall.keyword import get_keyword_index
    from memories.recall.vector_store import get_vector_store

    seconds, written = [], []
    for start in range(0, WRITE_BATCH * WRITE_BATCHES, WRITE_BATCH):
        memories = bulk.user_memories(user, items[start : start + WRITE_BATCH])
        batch = vectors[start : start + WRITE_BATCH]
        begun = time.perf_counter()
        with transaction.atomic():
            Memory.objects.bulk_create(memories)
            get_vector_store().save_many(
                items=[
                    (memory, vector.tolist())
                    for memory, vector in zip(memories, batch, strict=True)
                ],
                model=model,
            )
            get_keyword_index().save_new(memories=memories)
        seconds.append(time.perf_counter() - begun)
        written += [memory.id for memory in memories]
    return latency_summary(seconds), written


def _delete(memory_ids: list) -> None:
    from memories.models import Memory

    Memory.objects.filter(id__in=memory_ids).delete()
    _sql("VACUUM memories_memoryembedding")


def _searches(partition, query_vectors, exact, ids, *, ef_search: int, k: int) -> dict:
    """The vector store's search of the partition at this ef_search: the share of the exact
    nearest k found (mean and lowest) and its time. Raises if the plan does not walk the
    graph (the numbers would be an exact scan's)."""
    from bench.metrics import latency_summary
    from memories.models import Status
    from memories.recall.vector_store import get_vector_store
    from memories.recall.vector_store.partition_indexes import NAME_PREFIX

    store = get_vector_store()
    _sql(f"SET hnsw.ef_search = {int(ef_search)}")
    sql, params = store.nearest_sql(
        vector=query_vectors[0].tolist(), partitions=[partition], k=k, status=Status.ACTIVE
    )
    plan = "\n".join(row[0] for row in _sql("EXPLAIN " + sql, params))
    if NAME_PREFIX not in plan:
        raise RuntimeError(f"the search does not walk the partition's graph:\n{plan}")
    seconds, shares = [], []
    for query, nearest in zip(query_vectors, exact, strict=True):
        begun = time.perf_counter()
        hits = store.nearest(
            vector=query.tolist(), partitions=[partition], k=k, status=Status.ACTIVE
        )
        seconds.append(time.perf_counter() - begun)
        shares.append(len({ids[hit.memory_id] for hit in hits} & nearest) / len(nearest))
    summary = latency_summary(seconds)
    return {
        "ef_search": ef_search,
        "found": round(float(np.mean(shares)), 4),
        "lowest": round(float(min(shares)), 2),
        "knn_p50_ms": summary["p50_ms"],
        "knn_p95_ms": summary["p95_ms"],
    }
