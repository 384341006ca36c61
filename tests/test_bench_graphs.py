"""`python -m bench graphs` (bench/graphs.py): each build of a partition's HNSW graph is timed
for its searches and its writes, and the partition is left as it was for the next build."""

import numpy as np
import pytest
from django.conf import settings
from django.db import connection

from bench import graphs
from bench.report_graphs import graphs_section
from bench.synthetic import Corpus
from memories.models import Memory, Scope, User
from memories.recall.vector_store import partition_key
from memories.recall.vector_store.partition_indexes import (
    GRAPH_EF_CONSTRUCTION,
    GRAPH_M,
    is_partition_index_name,
    partition_index_name,
)
from tests.test_bench_synthetic_noise import word_vectors_in_a_cone

MEMORIES = 2000
BUILDS = ((16, 32), (8, 16))


def _corpus():
    corpus = Corpus(word_vectors_in_a_cone(), noise=0.3)
    items, vectors = corpus.memories(MEMORIES + graphs.WRITE_BATCH * graphs.WRITE_BATCHES)
    rng = np.random.default_rng(5)
    queries = vectors[:12] + 0.3 * rng.normal(size=(12, vectors.shape[1])) / np.sqrt(384)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return items, vectors, queries.astype(np.float32)


def _time(items, vectors, queries):
    return graphs.time_builds(
        items=items,
        vectors=vectors,
        query_vectors=queries,
        memories=MEMORIES,
        model="test",
        builds=BUILDS,
        ef_searches=(40, 10),
    )


def _graphs_left() -> list[str]:
    """The graphs of the benchmark's partition still there (other tests' may exist)."""
    user = User.objects.get(username="bench-graphs")
    partition = partition_key(scope=Scope.USER, user_id=user.id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename LIKE 'memories_%%'")
        names = [name for (name,) in cursor.fetchall() if is_partition_index_name(name)]
    return [name for name in names if name == partition_index_name(partition, 384)]


@pytest.mark.django_db(transaction=True)
def test_each_build_is_timed_and_the_partition_left_as_it_was():
    items, vectors, queries = _corpus()
    if connection.vendor != "postgresql":
        with pytest.raises(SystemExit, match="PostgreSQL"):
            _time(items, vectors, queries)
        return
    result = _time(items, vectors, queries)
    assert [(b["m"], b["ef_construction"]) for b in result["builds"]] == list(BUILDS)
    assert result["write_without_graph"]["n"] == graphs.WRITE_BATCHES
    for build in result["builds"]:
        assert build["graph_mb"] > 0
        assert build["write"]["n"] == graphs.WRITE_BATCHES
        assert [search["ef_search"] for search in build["searches"]] == [40, 10]
        for search in build["searches"]:
            assert 0 <= search["lowest"] <= search["found"] <= 1
            assert search["knn_p50_ms"] > 0
        # 2,000 vectors walked with ef_search 40 and the iterative scan: nearly all found.
        assert build["searches"][0]["found"] >= 0.9, build
    # The writes were deleted and no graph was left behind; ef_search is the service's again.
    assert Memory.objects.filter(user__username="bench-graphs").count() == MEMORIES
    assert _graphs_left() == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search')")
        assert cursor.fetchone()[0] == str(settings.RECALL_HNSW_EF_SEARCH)

    meta = {
        "command": "python -m bench graphs",
        "date": "2026-12-05T23:00:00+00:00",
        "git": "abc1234",
        "seconds": 60,
        "machine": {"nproc": 2, "python": "3.11", "platform": "Linux"},
    }
    section = "\n".join(
        graphs_section("graphs-x.json", {"meta": meta, "graphs": {"postgresql": result}})
    )
    assert "| 16 | 32 |" in section and "| 8 | 16 |" in section
    assert "ef_search 10: found (lowest)" in section
    assert (
        f"m {GRAPH_M}, ef_construction {GRAPH_EF_CONSTRUCTION}, searched at ef_search "
        f"{settings.RECALL_HNSW_EF_SEARCH}" in section
    )


def test_the_writes_follow_the_partition_in_the_items():
    items, vectors, queries = _corpus()
    with pytest.raises((ValueError, SystemExit)):
        graphs.time_builds(
            items=items[:MEMORIES],
            vectors=vectors[:MEMORIES],
            query_vectors=queries,
            memories=MEMORIES,
            model="test",
        )
