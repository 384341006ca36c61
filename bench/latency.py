"""Search latency with the memories of ONE user at growing sizes (default 10k and 100k), on
whatever database the worker was set up on. For each size, over the same queries:

  knn        get_vector_store().nearest(k=RECALL_CANDIDATES) alone: the floor any hybrid
             search must pay
  recall     memory_recall(query_vector=precomputed): the whole hybrid recall without the
             query embedding (keyword search, distances, Memory fetch, scoring, access UPDATE)
  recall+embed  memory_recall through the real embedder
  embed      the embedder alone on one query
  http       GET /api/memories/search (token auth, serialisation) in process, django.test.Client
and a step-by-step breakdown of `recall` (each store call timed where memory_recall makes it).
Every timed recall counts accesses (record_access on), as in production."""

import re
import time
from contextlib import ExitStack
from unittest import mock
from uuid import UUID

import numpy as np

from bench.metrics import latency_summary
from bench.synthetic import Corpus, vocabulary

WARM_UP = 10
TOP_K = 10


class _Timer:
    def __init__(self) -> None:
        self.steps: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.steps[name] = self.steps.get(name, 0.0) + seconds

    def wrap(self, name, fn):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - started)

        return timed


def _breakdown(queries, vectors, scopes) -> dict:
    """memory_recall with each of its steps timed (store calls wrapped where recall.py calls
    them); 'scoring+rest' is what remains: building Q objects, the scoring loop, sorting."""
    from memories import services
    from memories.models import Memory
    from memories.recall import recall as recall_module

    timer = _Timer()
    real_store = recall_module.get_vector_store
    real_keyword = recall_module.get_keyword_index
    real_access = services.memory_record_access

    class TimedStore:
        def __init__(self) -> None:
            store = real_store()
            self.nearest = timer.wrap("nearest", store.nearest)
            self.distances = timer.wrap("distances", store.distances)

    class TimedKeyword:
        def __init__(self) -> None:
            self.search = timer.wrap("keyword", real_keyword().search)

    class TimedMemory:
        class objects:  # noqa: N801 - stands in for Memory.objects
            @staticmethod
            def filter(*args, **kwargs):
                started = time.perf_counter()
                rows = list(Memory.objects.filter(*args, **kwargs))
                timer.add("memory_fetch", time.perf_counter() - started)
                return rows

    per_step: dict[str, list[float]] = {}
    totals = []
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(recall_module, "get_vector_store", TimedStore))
        stack.enter_context(mock.patch.object(recall_module, "get_keyword_index", TimedKeyword))
        stack.enter_context(mock.patch.object(recall_module, "Memory", TimedMemory))
        stack.enter_context(
            mock.patch.object(
                services, "memory_record_access", timer.wrap("access_update", real_access)
            )
        )
        for query, vector in zip(queries, vectors, strict=True):
            timer.steps = {}
            started = time.perf_counter()
            recall_module.memory_recall(
                query=query, scopes=scopes, top_k=TOP_K, query_vector=vector
            )
            total = time.perf_counter() - started
            totals.append(total)
            steps = dict(timer.steps)
            steps["scoring+rest"] = total - sum(steps.values())
            for name, seconds in steps.items():
                per_step.setdefault(name, []).append(seconds)
    return {
        "total": latency_summary(totals),
        "steps": {name: latency_summary(values) for name, values in per_step.items()},
    }


def _time(fn, items) -> list[float]:
    for item in items[:WARM_UP]:
        fn(item)
    seconds = []
    for item in items:
        started = time.perf_counter()
        fn(item)
        seconds.append(time.perf_counter() - started)
    return seconds


def _plans(vector, partitions, query, scopes) -> dict:
    """EXPLAIN ANALYZE of the nearest-neighbour and keyword queries (PostgreSQL), and how many
    rows the keyword query matched."""
    from django.db import connection

    from memories.models import Status
    from memories.recall.keyword import get_keyword_index, query_terms
    from memories.recall.vector_store import pgvector

    out = {"sample_query": query, "keyword_terms": query_terms(query)}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            d = len(vector)
            cursor.execute(
                f"EXPLAIN (ANALYZE, BUFFERS) SELECT memory_id, (vector::vector({d})) <=> "
                f"%s::vector({d}) AS distance FROM {pgvector.TABLE} WHERE dimensions = %s AND "
                "partition = ANY(%s) AND status = %s ORDER BY distance LIMIT 50",
                [pgvector.Vector(list(vector)).to_text(), d, list(partitions), Status.ACTIVE],
            )
            out["nearest_plan"] = [
                re.sub(r"'\[[^']*\]'", "'[...]'", row[0]) for row in cursor.fetchall()
            ]
            tsquery = " | ".join(query_terms(query))
            cursor.execute(
                "SELECT count(*) FROM memories_memory "
                "WHERE search_vector @@ to_tsquery('english', %s)",
                [tsquery],
            )
            out["keyword_matches"] = cursor.fetchone()[0]
        else:
            from memories.recall.keyword import FTS_TABLE, _quoted

            cursor.execute(
                f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s",
                [f"text : ({_quoted(query_terms(query))})"],
            )
            out["keyword_matches"] = cursor.fetchone()[0]
    hits = get_keyword_index().search(
        text=query,
        partitions=partitions,
        scopes=[s.condition for s in scopes],
        k=50,
        status=Status.ACTIVE,
    )
    out["keyword_hits_returned"] = len(hits)
    return out


def _profile(fn, items, *, sort: str = "tottime", limit: int = 15) -> list[str]:
    """cProfile of fn over items: the top functions (by own or cumulative time)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for item in items:
        fn(item)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(limit)
    lines = [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]
    return [re.sub(r"/\S*/(site-packages|python3\.\d+)/", "", line) for line in lines[-limit - 1 :]]


def _full_keyword_ranking(query: str, user_id, k: int) -> list:
    """The keyword half without RECALL_KEYWORD_SCAN: every match ranked (BM25 on SQLite,
    ts_rank on PostgreSQL), best k ids. The reference for what the scan cap leaves out."""
    from django.db import connection

    from memories.models import Scope
    from memories.recall.keyword import FTS_TABLE, _partition_token, _quoted, query_terms
    from memories.recall.vector_store import partition_key

    terms = query_terms(query)
    if not terms:
        return []
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            token = _partition_token(partition_key(scope=Scope.USER, user_id=user_id))
            cursor.execute(
                f"SELECT memory_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s "
                f"AND status = 'active' ORDER BY bm25({FTS_TABLE}, 0.0, 1.0, 0.0, 0.0) LIMIT %s",
                [f'part : ("{token}") AND text : ({_quoted(terms)})', k],
            )
            return [UUID(hex=row[0]) for row in cursor.fetchall()]
        tsquery = " | ".join(terms)
        cursor.execute(
            "SELECT id FROM memories_memory WHERE user_id = %s AND scope = 'user' "
            "AND status = 'active' AND deleted_at IS NULL "
            "AND search_vector @@ to_tsquery('english', %s) "
            "ORDER BY ts_rank(search_vector, to_tsquery('english', %s), 1) DESC LIMIT %s",
            [user_id, tsquery, tsquery, k],
        )
        return [UUID(str(row[0])) for row in cursor.fetchall()]


def _probes(pairs, scopes, n: int) -> dict:
    """Steps of memory_recall timed alone and next to alternatives, on the same data and
    queries, to back the suggested fixes (the alternatives are not used by the service).
    Also how much of the full keyword ranking the RECALL_KEYWORD_SCAN cap keeps."""
    import sqlite_vec
    from django.conf import settings
    from django.db import connection, transaction
    from django.db.models import F
    from django.utils import timezone

    from memories.models import Memory, Status
    from memories.recall.keyword import get_keyword_index
    from memories.recall.vector_store import get_vector_store

    store = get_vector_store()
    keyword = get_keyword_index()
    partitions = [s.partition for s in scopes]
    conditions = [s.condition for s in scopes]
    k = settings.RECALL_CANDIDATES
    cases, kept = [], []
    for query, vector in pairs[:n]:
        hits = keyword.search(
            text=query, partitions=partitions, scopes=conditions, k=k, status=Status.ACTIVE
        )
        ids = [memory_id for memory_id, _ in hits]
        cases.append((query, vector, ids))
        full_top = _full_keyword_ranking(query, scopes[0].user_id, 10)
        if full_top:
            kept.append(len(set(full_top) & set(ids)) / len(full_top))

    def distances(case):
        store.distances(vector=case[1], memory_ids=case[2])

    def distances_vec0_in_list(case):
        """One statement, `memory_id IN (...)` on the vec0 table (vec0 scans it all)."""
        ids = [i.hex for i in case[2]]
        if not ids:
            return
        placeholders = ", ".join(["%s"] * len(ids))
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT memory_id, vec_distance_cosine(embedding, %s) FROM vec_memory_embeddings "
                f"WHERE memory_id IN ({placeholders})",
                [sqlite_vec.serialize_float32(case[1]), *ids],
            )
            cursor.fetchall()

    def distances_plain_table(case):
        """The same distances from a plain B-tree table (memory_id primary key, vector blob)."""
        ids = [i.hex for i in case[2]]
        if not ids:
            return
        placeholders = ", ".join(["%s"] * len(ids))
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT memory_id, vec_distance_cosine(embedding, %s) FROM bench_plain_vectors "
                f"WHERE memory_id IN ({placeholders})",
                [sqlite_vec.serialize_float32(case[1]), *ids],
            )
            cursor.fetchall()

    def fetch_full(case):
        list(Memory.objects.filter(id__in=case[2], status=Status.ACTIVE))

    def fetch_scoring_fields(case):
        list(
            Memory.objects.filter(id__in=case[2], status=Status.ACTIVE).values_list(
                "id",
                "scope",
                "importance",
                "confidence",
                "updated_at",
                "last_accessed_at",
                "access_count",
            )
        )

    def keyword_search(case):
        keyword.search(
            text=case[0], partitions=partitions, scopes=conditions, k=k, status=Status.ACTIVE
        )

    def keyword_full_ranking(case):
        _full_keyword_ranking(case[0], scopes[0].user_id, k)

    def access_update(case):
        Memory.objects.filter(id__in=case[2][:10]).update(
            access_count=F("access_count") + 1, last_accessed_at=timezone.now()
        )

    def pg_access_update_async_commit(case):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
            access_update(case)

    probes = [
        ("keyword_search", keyword_search),
        ("keyword_full_ranking", keyword_full_ranking),
        ("distances", distances),
        ("memory_fetch_full_rows", fetch_full),
        ("memory_fetch_scoring_fields", fetch_scoring_fields),
        ("access_update", access_update),
    ]
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS bench_plain_vectors")
            cursor.execute(
                "CREATE TABLE bench_plain_vectors (memory_id TEXT PRIMARY KEY, embedding BLOB) "
                "WITHOUT ROWID"
            )
            cursor.execute(
                "INSERT INTO bench_plain_vectors SELECT memory_id, embedding "
                "FROM vec_memory_embeddings"
            )
        probes += [
            ("distances_vec0_in_list", distances_vec0_in_list),
            ("distances_plain_table", distances_plain_table),
        ]
    else:
        probes += [("access_update_async_commit", pg_access_update_async_commit)]
    results = {name: latency_summary(_time(fn, cases)) for name, fn in probes}
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE bench_plain_vectors")
    results["keyword_scan_cap"] = {
        "scan": settings.RECALL_KEYWORD_SCAN,
        "queries": len(kept),
        "full_top10_kept_in_top50": round(float(np.mean(kept)), 3) if kept else None,
    }
    return results


def run(
    *, sizes: list[int], queries: int, http_queries: int = 100, breakdown_queries: int = 50
) -> dict:
    from django.conf import settings
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from bench import bulk
    from memories.embedders import get_embedder
    from memories.models import Status, User
    from memories.recall.recall import memory_recall
    from memories.recall.scopes import recall_scopes
    from memories.recall.vector_store import get_vector_store

    started_all = time.perf_counter()
    embedder = get_embedder()
    words = vocabulary()
    started = time.perf_counter()
    word_vectors = dict(
        zip(words, np.asarray(embedder.embed(words), dtype=np.float32), strict=True)
    )
    vocabulary_seconds = time.perf_counter() - started
    corpus = Corpus(word_vectors)
    query_texts = corpus.queries(queries)
    query_vectors = [list(map(float, v)) for v in embedder.embed(query_texts)]
    pairs = list(zip(query_texts, query_vectors, strict=True))

    user = User.objects.create_user(username="bench-latency")
    token = Token.objects.create(user=user)
    client = Client(HTTP_AUTHORIZATION=f"Token {token.key}", HTTP_HOST="localhost")
    scopes = recall_scopes(user=user)
    partitions = [s.partition for s in scopes]
    store = get_vector_store()
    k = settings.RECALL_CANDIDATES

    def knn(pair):
        store.nearest(vector=pair[1], partitions=partitions, k=k, status=Status.ACTIVE)

    def recall(pair):
        memory_recall(query=pair[0], scopes=scopes, top_k=TOP_K, query_vector=pair[1])

    def recall_embed(pair):
        memory_recall(query=pair[0], scopes=scopes, top_k=TOP_K)

    def embed(pair):
        embedder.embed([pair[0]])

    def http(pair):
        response = client.get("/api/memories/search", {"q": pair[0], "top_k": TOP_K})
        if response.status_code != 200:
            raise RuntimeError(f"search answered {response.status_code}: {response.content!r}")

    loaded = 0
    results = []
    for size in sorted(sizes):
        started = time.perf_counter()
        items, vectors = corpus.memories(size - loaded, start=loaded)
        generate_seconds = time.perf_counter() - started
        load = bulk.load(user, items, vectors, model=embedder.model_name)
        load["generate_seconds"] = round(generate_seconds, 1)
        loaded = size
        started = time.perf_counter()
        modes = {}
        for name, fn, n in (
            ("knn", knn, queries),
            ("recall", recall, queries),
            ("embed", embed, queries),
            ("recall_embed", recall_embed, queries),
            ("http", http, http_queries),
        ):
            modes[name] = latency_summary(_time(fn, pairs[:n]))
        n = breakdown_queries
        breakdown = _breakdown(query_texts[:n], query_vectors[:n], scopes)
        probes = _probes(pairs, scopes, n)
        profile = {
            "recall_by_own_time": _profile(recall, pairs[:n]),
            "http_by_cumulative_time": _profile(http, pairs[:n], sort="cumulative", limit=40),
        }
        results.append(
            {
                "memories": size,
                "load": load,
                "modes": modes,
                "ratio_recall_to_knn_p95": round(
                    modes["recall"]["p95_ms"] / modes["knn"]["p95_ms"], 2
                ),
                "ratio_recall_to_knn_p50": round(
                    modes["recall"]["p50_ms"] / modes["knn"]["p50_ms"], 2
                ),
                "breakdown": breakdown,
                "probes": probes,
                "profile": profile,
                "plans": _plans(query_vectors[0], partitions, query_texts[0], scopes),
                "query_seconds": round(time.perf_counter() - started, 1),
            }
        )
    return {
        "queries": queries,
        "http_queries": http_queries,
        "breakdown_queries": breakdown_queries,
        "candidates_k": k,
        "vocabulary_words": len(words),
        "vocabulary_embed_seconds": round(vocabulary_seconds, 1),
        "sample_queries": query_texts[:5],
        "sample_memories": [v for _, v in corpus.memories(3, start=10**9)[0]],
        "sizes": results,
        "seconds": round(time.perf_counter() - started_all, 1),
    }
