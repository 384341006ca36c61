"""Search latency with the memories of ONE user at growing sizes (default 10k and 100k), on
whatever database the worker was set up on. For each size, over the same queries:

  knn        get_vector_store().nearest(k=RECALL_CANDIDATES) alone: the floor any hybrid
             search must pay
  recall     memory_recall(query_vector=precomputed): the whole hybrid recall without the
             query embedding (keyword search, distances, Memory fetch, scoring, access UPDATE)
  recall+embed  memory_recall through the real embedder
  embed      the embedder alone on one query
  http       GET /api/memories/search (token auth, serialisation) in process, django.test.Client
and a breakdown of `recall` (its candidate step, scoring, access UPDATE). Every timed recall
counts accesses (record_access on), as in production.

The modes are timed interleaved: round j runs mode i on query (j + i*n/modes) mod n, so
every mode sees every query once, a change in the machine's speed during the run hits all
modes alike, and no mode runs a query another mode ran just before (which would find its
index pages in the CPU caches).

With --data, the largest size also measures quality at scale: LOCOMO conversations saved
among the synthetic memories of the same user, recall@10 of their questions for several
keyword row budgets (RECALL_KEYWORD_ROW_BUDGET)."""

import re
import time
from contextlib import ExitStack
from unittest import mock

import numpy as np

from bench.metrics import latency_summary
from bench.synthetic import Corpus, embedded_vocabulary, noise_for

WARM_UP = 10
TOP_K = 10


class _Timer:
    def __init__(self) -> None:
        self.steps: dict[str, float] = {}

    def wrap(self, name, fn):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.steps[name] = self.steps.get(name, 0.0) + time.perf_counter() - started

        return timed


def _breakdown(queries, vectors, scopes) -> dict:
    """memory_recall with its steps timed where recall.py calls them: the candidate step
    (nearest neighbours, keyword hits, scoring fields), the access UPDATE that returns the
    top_k rows, and what remains (scoring, sorting)."""
    from memories.recall import recall as recall_module

    timer = _Timer()
    per_step: dict[str, list[float]] = {}
    totals = []
    with ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(
                recall_module,
                "find_candidates",
                timer.wrap("candidates", recall_module.find_candidates),
            )
        )
        stack.enter_context(
            mock.patch.object(
                recall_module,
                "memory_record_access",
                timer.wrap("access_update", recall_module.memory_record_access),
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


def _time_interleaved(modes: dict, items: list) -> dict[str, list[float]]:
    """Seconds per call of each mode over all items, interleaved (see the module doc)."""
    for fn in modes.values():
        for item in items[:WARM_UP]:
            fn(item)
    n = len(items)
    shift = max(1, n // len(modes))
    seconds: dict[str, list[float]] = {name: [] for name in modes}
    for j in range(n):
        for i, (name, fn) in enumerate(modes.items()):
            item = items[(j + i * shift) % n]
            started = time.perf_counter()
            fn(item)
            seconds[name].append(time.perf_counter() - started)
    return seconds


def _plans(vector, partitions, query, scopes) -> dict:
    """EXPLAIN ANALYZE of the nearest-neighbour and keyword queries (PostgreSQL), and how many
    rows the keyword query matched."""
    from django.db import connection

    from memories.models import Status
    from memories.recall.keyword import get_keyword_index
    from memories.recall.postings import collection_of
    from memories.recall.vector_store import pgvector
    from memories.recall.words import query_terms

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
    terms = query_terms(query)
    _, collection = collection_of([scope.partition for scope in scopes], terms)
    out["keyword_matches"] = sum(collection.term_memories.values())
    hits = get_keyword_index().search(text=query, scopes=scopes, k=50)
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


def _probes(pairs, scopes) -> dict:
    """Parts of recall alone and next to their alternatives, on the same data and queries
    (interleaved like the modes): the keyword search with and without the row budget, and on
    PostgreSQL the candidate step in one statement against step by step."""
    from django.conf import settings
    from django.test.utils import override_settings

    from memories.recall import candidates
    from memories.recall.keyword import get_keyword_index

    keyword = get_keyword_index()
    k = settings.RECALL_CANDIDATES

    def keyword_search(pair):
        keyword.search(text=pair[0], scopes=scopes, k=k)

    def keyword_unbounded(pair):
        with override_settings(RECALL_KEYWORD_ROW_BUDGET=10**9):
            keyword_search(pair)

    def one_statement(pair):
        candidates.find_candidates(
            vector=pair[1],
            scopes=scopes,
            k=k,
            keyword=candidates.keyword_hits(query=pair[0], scopes=scopes, k=k),
        )

    def step_by_step(pair):
        hits = keyword.search(text=pair[0], scopes=scopes, k=k)
        candidates._step_by_step(
            vector=pair[1], scopes=scopes, k=k, keyword={h.memory_id: h for h in hits}
        )

    probes = {"keyword_search": keyword_search}
    from django.db import connection

    if connection.vendor == "postgresql":
        probes |= {
            "keyword_unbounded": keyword_unbounded,
            "candidates_one_statement": one_statement,
            "candidates_step_by_step": step_by_step,
        }
    seconds = _time_interleaved(probes, pairs)
    return {name: latency_summary(values) for name, values in seconds.items()}


SCALE_BUDGETS = (10**9, 2000, 1000, 700, 500, 400)
SCALE_CONVERSATIONS = 2


def _scale_quality(data: str, user, embedder) -> dict:
    """LOCOMO conversations saved among the user's synthetic memories (through
    memory_create, vectors from the embedder); recall@10 of their questions per keyword row
    budget, access counting off so every budget sees the same counts."""
    from django.test.utils import override_settings

    from bench import locomo
    from bench.metrics import recall_at
    from bench.quality import _service_rankings
    from memories.models import Scope, Source
    from memories.services import memory_create

    conversations = locomo.load(data, limit=SCALE_CONVERSATIONS)
    keys = {}
    for conversation in conversations:
        texts = [f"{conversation.sample_id}:{t.dia_id}: {t.text}" for t in conversation.turns]
        for turn, vector in zip(conversation.turns, embedder.embed(texts), strict=True):
            memory = memory_create(
                actor=None,
                scope=Scope.USER,
                user=user,
                key=f"{conversation.sample_id}:{turn.dia_id}",
                value=turn.text,
                source=Source.CONVERSATION,
                vector=vector,
            )
            # Both conversations number their turns alike (D1:3, ...): key by both.
            keys[memory.id] = memory.key
    questions = [q for conversation in conversations for q in conversation.questions]
    evidence_keys = [
        frozenset(f"{conversation.sample_id}:{dia_id}" for dia_id in question.evidence)
        for conversation in conversations
        for question in conversation.questions
    ]
    texts = [q.text for q in questions]
    vectors = [list(map(float, v)) for v in embedder.embed_queries(texts)]
    users = {conversation.sample_id: user for conversation in conversations}
    rows = []
    for budget in SCALE_BUDGETS:
        with override_settings(RECALL_KEYWORD_ROW_BUDGET=budget):
            rankings, seconds, _ = _service_rankings(
                conversations, users, keys, record_access=False, query_vectors=vectors
            )
        recalls = [
            recall_at(ranked, evidence, TOP_K)
            for ranked, evidence in zip(rankings, evidence_keys, strict=True)
        ]
        rows.append(
            {
                "budget": budget,
                "recall@10": round(float(np.mean(recalls)), 4),
                "latency": latency_summary(seconds),
            }
        )
    return {
        "conversations": [c.sample_id for c in conversations],
        "memories_added": len(keys),
        "questions": len(questions),
        "rows": rows,
    }


def run(
    *,
    sizes: list[int],
    queries: int,
    breakdown_queries: int = 50,
    data: str | None = None,
) -> dict:
    from django.conf import settings
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from bench import bulk
    from memories.embeddings.embedders import get_embedder
    from memories.models import Status, User
    from memories.recall.recall import memory_recall
    from memories.recall.scopes import recall_scopes
    from memories.recall.vector_store import get_vector_store

    started_all = time.perf_counter()
    embedder = get_embedder()
    started = time.perf_counter()
    word_vectors = embedded_vocabulary(embedder)
    vocabulary_seconds = time.perf_counter() - started
    corpus = Corpus(word_vectors, noise=noise_for(embedder.model_name))
    query_texts = corpus.queries(queries)
    query_vectors = [list(map(float, v)) for v in embedder.embed_queries(query_texts)]
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
        embedder.embed_queries([pair[0]])

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
        seconds = _time_interleaved(
            {
                "knn": knn,
                "recall": recall,
                "embed": embed,
                "recall_embed": recall_embed,
                "http": http,
            },
            pairs,
        )
        modes = {name: latency_summary(values) for name, values in seconds.items()}
        n = breakdown_queries
        breakdown = _breakdown(query_texts[:n], query_vectors[:n], scopes)
        probes = _probes(pairs, scopes)
        profile = {
            "recall_by_own_time": _profile(recall, pairs[:n]),
            "http_by_cumulative_time": _profile(http, pairs[:n], sort="cumulative", limit=40),
        }
        scale = _scale_quality(data, user, embedder) if data and size == max(sizes) else None
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
                "scale_quality": scale,
                "query_seconds": round(time.perf_counter() - started, 1),
            }
        )
    return {
        "queries": queries,
        "breakdown_queries": breakdown_queries,
        "keyword_row_budget": settings.RECALL_KEYWORD_ROW_BUDGET,
        "candidates_k": k,
        "vocabulary_words": len(word_vectors),
        "vocabulary_embed_seconds": round(vocabulary_seconds, 1),
        "sample_queries": query_texts[:5],
        "sample_memories": [v for _, v in corpus.memories(3, start=10**9)[0]],
        "sizes": results,
        "seconds": round(time.perf_counter() - started_all, 1),
    }
