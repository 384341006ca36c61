"""Search of light and heavy users among others: exactly their own nearest for a light user,
at least 0.98 of the exact nearest for a heavy one, on both databases; on PostgreSQL the
heavy user's partition gets an HNSW graph of its own (partition_indexes), which the search
takes, and loses it when it shrinks."""

import os

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from memories.models import MemoryEmbedding, Status
from memories.recall.vector_store import get_vector_store, partition_of
from memories.recall.vector_store.partition_indexes import (
    partition_index_name,
    partition_index_plan,
    partition_indexes_sync,
)
from tests.conftest import make_user
from tests.memories.helpers import bulk_memories

DIMENSIONS = 384
K = 50
HEAVY = 2000
HEAVY2 = 1500
LIGHT = 30
MIN_MEMORIES = 1000


def test_a_partition_gets_its_graph_at_the_threshold_and_keeps_it_down_to_half():
    counts = {("user:1", 384): 1000, ("user:2", 384): 999, ("user:3", 384): 600}
    plan = partition_index_plan(counts, {}, min_memories=1000)
    assert plan.create == [("user:1", 384)]
    assert plan.drop == []

    kept = {partition_index_name("user:3", 384): True}
    plan = partition_index_plan(counts, kept, min_memories=1000)
    assert plan.create == [("user:1", 384)]
    assert plan.drop == []


def test_a_graph_is_dropped_below_half_and_an_invalid_one_rebuilt():
    shrunk = partition_index_name("user:3", 384)
    invalid = partition_index_name("user:1", 384)
    counts = {("user:1", 384): 5000, ("user:3", 384): 499}
    plan = partition_index_plan(counts, {shrunk: True, invalid: False}, min_memories=1000)
    assert plan.drop == sorted([shrunk, invalid])
    assert plan.create == [("user:1", 384)]
    # A partition with no counted rows at all (erased) loses its graph too.
    plan = partition_index_plan({}, {shrunk: True}, min_memories=1000)
    assert plan.drop == [shrunk]


def test_index_names_fit_postgresql_and_differ_per_partition_and_dimensions():
    long_partition = "project:" + "9" * 40 + ":" + "f" * 70
    names = {
        partition_index_name(long_partition, 384),
        partition_index_name(long_partition, 768),
        partition_index_name(long_partition[:-1] + "e", 384),
    }
    assert len(names) == 3
    assert all(len(name) <= 63 for name in names)


def _clustered(rng, count: int) -> np.ndarray:
    """Unit vectors around a few dozen centres, as texts on a few dozen topics embed (the
    same topics for every user: the seed is fixed)."""
    centres = np.random.default_rng(1).normal(size=(40, DIMENSIONS))
    vectors = centres[rng.integers(0, len(centres), count)] + 0.6 * rng.normal(
        size=(count, DIMENSIONS)
    )
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _store_memories(user, vectors: np.ndarray) -> tuple[str, dict]:
    """The user's partition and their new memories' vectors by id."""
    memories = bulk_memories(user, len(vectors), status=Status.ACTIVE)
    get_vector_store().save_many(
        items=list(zip(memories, [v.tolist() for v in vectors], strict=True)), model="test"
    )
    by_id = {memory.id: vector for memory, vector in zip(memories, vectors, strict=True)}
    return partition_of(memories[0]), by_id


@pytest.fixture
def population(db):
    """A heavy and a light user, and two others like them whose vectors lie near theirs."""
    rng = np.random.default_rng(7)
    users = {}
    for name, count in (("heavy", HEAVY), ("light", LIGHT), ("heavy2", HEAVY2), ("light2", 40)):
        users[name] = _store_memories(make_user(name), _clustered(rng, count))
    return users, rng


def _exact(vectors_by_id: dict, query: np.ndarray, k: int) -> list:
    ids = list(vectors_by_id)
    matrix = np.array([vectors_by_id[i] for i in ids])
    order = np.argsort(1.0 - matrix @ query, kind="stable")[:k]
    return [ids[i] for i in order]


def _found_shares(partition, vectors_by_id, queries) -> list[float]:
    shares = []
    for query in queries:
        hits = get_vector_store().nearest(
            vector=query.tolist(), partitions=[partition], k=K, status=Status.ACTIVE
        )
        exact = _exact(vectors_by_id, query, K)
        shares.append(len({h.memory_id for h in hits} & set(exact)) / len(exact))
    return shares


def _queries(rng, vectors_by_id, count=20) -> np.ndarray:
    """Queries near stored vectors (as a question near the facts it asks about)."""
    stored = np.array(list(vectors_by_id.values()))
    picked = stored[rng.integers(0, len(stored), count)] + 0.5 * rng.normal(
        size=(count, DIMENSIONS)
    ) / np.sqrt(DIMENSIONS)
    return picked / np.linalg.norm(picked, axis=1, keepdims=True)


def _plan_of_search(partition, query) -> str:
    sql, params = get_vector_store().nearest_sql(
        vector=query.tolist(),
        partitions=[partition],
        k=K,
        status=Status.ACTIVE,
    )
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_a_light_user_gets_exactly_their_own_nearest(population):
    users, rng = population
    partition, vectors = users["light"]
    if connection.vendor == "postgresql":
        partition_indexes_sync(min_memories=MIN_MEMORIES)
    queries = _queries(rng, users["heavy"][1], 10)  # near other users' vectors, not theirs
    for query in queries:
        hits = get_vector_store().nearest(
            vector=query.tolist(), partitions=[partition], k=K, status=Status.ACTIVE
        )
        assert [h.memory_id for h in hits] == _exact(vectors, query, LIGHT)


def test_a_heavy_user_gets_nearly_all_of_their_exact_nearest(population):
    users, rng = population
    partition, vectors = users["heavy"]
    if connection.vendor == "postgresql":
        done = partition_indexes_sync(min_memories=MIN_MEMORIES)
        assert sorted(built["vectors"] for built in done["created"]) == [HEAVY2, HEAVY]
        plan = _plan_of_search(partition, _queries(rng, vectors, 1)[0])
        # The search walks the user's own graph, not the global one.
        assert partition_index_name(partition, DIMENSIONS) in plan, plan
    shares = _found_shares(partition, vectors, _queries(rng, vectors))
    assert np.mean(shares) >= 0.98, shares
    assert min(shares) >= 0.9, shares


def test_a_search_over_two_partitions_merges_their_nearest(population):
    users, rng = population
    (heavy, heavy_vectors), (light, light_vectors) = users["heavy"], users["light"]
    if connection.vendor == "postgresql":
        partition_indexes_sync(min_memories=MIN_MEMORIES)
    both = {**heavy_vectors, **light_vectors}
    partitions = [heavy, light]
    for query in _queries(rng, light_vectors, 5):
        hits = get_vector_store().nearest(
            vector=query.tolist(), partitions=partitions, k=K, status=Status.ACTIVE
        )
        exact = _exact(both, query, K)
        assert len(hits) == K
        assert len({h.memory_id for h in hits} & set(exact)) >= 0.96 * K
        # Every light vector nearer than the 50th is there: the light partition is exact.
        cut = hits[-1].distance
        nearer = [i for i in light_vectors if 1.0 - light_vectors[i] @ query < cut - 1e-6]
        assert set(nearer) <= {h.memory_id for h in hits}


def _partition_indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE %s",
            [f"memory_embedding_hnsw_{DIMENSIONS}_p%"],
        )
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_command_builds_graphs_concurrently_and_drops_them_when_a_user_shrinks():
    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="not PostgreSQL"):
            call_command("index_partitions", min_memories=MIN_MEMORIES)
        return
    rng = np.random.default_rng(3)
    partition, heavy_vectors = _store_memories(make_user("heavy"), _clustered(rng, 1200))
    _store_memories(make_user("light"), _clustered(rng, 20))

    call_command("index_partitions", min_memories=MIN_MEMORIES, verbosity=0)
    assert _partition_indexes() == {partition_index_name(partition, DIMENSIONS)}
    call_command("index_partitions", min_memories=MIN_MEMORIES, verbosity=0)  # idempotent
    assert _partition_indexes() == {partition_index_name(partition, DIMENSIONS)}

    # Down to 600 (above half): kept; down to 400: dropped.
    ids = list(heavy_vectors)
    MemoryEmbedding.objects.filter(memory_id__in=ids[:600]).delete()
    call_command("index_partitions", min_memories=MIN_MEMORIES, verbosity=0)
    assert _partition_indexes() == {partition_index_name(partition, DIMENSIONS)}
    MemoryEmbedding.objects.filter(memory_id__in=ids[600:800]).delete()
    call_command("index_partitions", min_memories=MIN_MEMORIES, verbosity=0)
    assert _partition_indexes() == set()


@pytest.mark.django_db(transaction=True)
def test_erasing_a_heavy_user_drops_the_graph_holding_their_vectors():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL: sqlite-vec keeps no graph")
    from memories.erasure import user_erase

    rng = np.random.default_rng(5)
    user = make_user("heavy")
    partition, _ = _store_memories(user, _clustered(rng, 1200))
    _store_memories(make_user("stays"), _clustered(rng, 1100))
    partition_indexes_sync(min_memories=MIN_MEMORIES)
    assert partition_index_name(partition, DIMENSIONS) in _partition_indexes()

    with override_settings(RECALL_PARTITION_INDEX_MIN_MEMORIES=MIN_MEMORIES):
        user_erase(user=user)  # tasks run inline here: the sync after the erasure commits

    assert len(_partition_indexes()) == 1
    assert partition_index_name(partition, DIMENSIONS) not in _partition_indexes()


def test_the_periodic_task_is_scheduled(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["index-large-partitions"]
    assert entry["task"] == "memories.tasks.index_partitions_task"
    assert entry["schedule"] == settings.RECALL_PARTITION_INDEX_INTERVAL_SECONDS


def test_postgresql_keeps_no_graph_of_every_users_vectors(db):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL: sqlite-vec keeps no graph")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
            [MemoryEmbedding._meta.db_table, "%USING hnsw%"],
        )
        graphs = [row[0] for row in cursor.fetchall()]
    # Only partitions' own graphs (none in an empty database): a search of a light user
    # never walks a graph filtered to them.
    assert all("_p" in name.removeprefix("memory_embedding_hnsw_") for name in graphs), graphs


def _near(rng, vector: np.ndarray) -> np.ndarray:
    """A vector at cosine ~0.97 of `vector`: a near duplicate's text."""
    noise = rng.normal(size=DIMENSIONS)
    near = vector + 0.25 * noise / np.linalg.norm(noise)
    return near / np.linalg.norm(near)


def test_a_heavy_users_near_duplicates_are_found_by_the_narrow_search(population):
    users, rng = population
    partition, vectors = users["heavy"]
    if connection.vendor == "postgresql":
        partition_indexes_sync(min_memories=MIN_MEMORIES)
        plan = _plan_of_search(partition, _queries(rng, vectors, 1)[0])
        assert partition_index_name(partition, DIMENSIONS) in plan, plan
    ids = list(vectors)
    for index in rng.choice(len(ids), 40, replace=False):
        stored = ids[index]
        hits = get_vector_store().nearest_few(
            vector=_near(rng, vectors[stored]).tolist(),
            partitions=[partition],
            k=3,
            status=Status.ACTIVE,
        )
        assert hits[0].memory_id == stored


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="hnsw.ef_search is PostgreSQL's",
)
@pytest.mark.parametrize(("narrow", "k", "expected"), [(7, 3, "7"), (2, 3, "3")])
def test_the_narrow_search_sets_ef_search_for_itself_only(
    population, settings, monkeypatch, narrow, k, expected
):
    settings.SAVE_SIMILAR_EF_SEARCH = narrow
    users, rng = population
    partition, vectors = users["heavy"]
    store = get_vector_store()
    search = store.nearest
    during = []

    def watched(**kwargs):
        during.append(_ef_search())
        return search(**kwargs)

    monkeypatch.setattr(store, "nearest", watched)
    before = _ef_search()
    # The test runs inside a transaction, as a caller's may: the setting must not outlive
    # the search in it.
    hits = store.nearest_few(
        vector=_near(rng, next(iter(vectors.values()))).tolist(),
        partitions=[partition],
        k=k,
        status=Status.ACTIVE,
    )

    assert len(hits) == k
    assert during == [expected]
    assert _ef_search() == before == str(settings.RECALL_HNSW_EF_SEARCH)


def _ef_search() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.ef_search")
        return cursor.fetchone()[0]


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="hnsw.ef_search is PostgreSQL's",
)
@pytest.mark.django_db(transaction=True)
def test_the_narrow_search_outside_a_transaction_leaves_the_setting_as_it_was(settings):
    settings.SAVE_SIMILAR_EF_SEARCH = 7
    rng = np.random.default_rng(3)
    partition, vectors = _store_memories(make_user("alone"), _clustered(rng, 5))

    hits = get_vector_store().nearest_few(
        vector=_near(rng, next(iter(vectors.values()))).tolist(),
        partitions=[partition],
        k=3,
        status=Status.ACTIVE,
    )

    assert len(hits) == 3
    assert _ef_search() == str(settings.RECALL_HNSW_EF_SEARCH)
