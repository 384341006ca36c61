"""SQLite's mirror of a large partition picks candidates by an 8-bit product, then scores them
exactly: nearly all of the exact nearest, every score exact, and writes taken in at once."""

import numpy as np
import pytest

from memories.recall.vector_store import sqlite_mirror
from memories.recall.vector_store.sqlite_mirror import PartitionMirror

DIMENSIONS = 384
ROWS = 50_000
K = 50


def _e5_like(rng, count: int) -> np.ndarray:
    """Unit vectors with a large part shared by all (as e5's: unrelated texts 0.8 similar)
    around a few dozen topics."""
    common = np.random.default_rng(1).normal(size=DIMENSIONS)
    topics = np.random.default_rng(2).normal(size=(40, DIMENSIONS))
    vectors = (
        3.0 * common
        + topics[rng.integers(0, len(topics), count)]
        + 0.7 * rng.normal(size=(count, DIMENSIONS))
    )
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def mirror():
    assert ROWS >= sqlite_mirror.QUANTIZED_MIN_ROWS
    rng = np.random.default_rng(9)
    mirror = PartitionMirror(DIMENSIONS)
    mirror.replace_all([f"{i:032x}" for i in range(ROWS)], _e5_like(rng, ROWS))
    return mirror, rng


def _exact(mirror: PartitionMirror, query: np.ndarray, k: int) -> list[str]:
    similarities = mirror.matrix[: mirror.size] @ query
    return [mirror.ids[i] for i in np.argsort(-similarities, kind="stable")[:k]]


def _query_near(mirror, rng) -> np.ndarray:
    row = mirror.matrix[rng.integers(0, mirror.size)]
    query = row + 0.03 * rng.normal(size=DIMENSIONS).astype(np.float32)
    return (query / np.linalg.norm(query)).astype(np.float32)


def test_a_large_partition_finds_nearly_all_of_its_exact_nearest_with_exact_scores(mirror):
    mirror, rng = mirror
    shares = []
    for _ in range(30):
        query = _query_near(mirror, rng)
        found = mirror.nearest(query, K)
        exact = _exact(mirror, query, K)
        shares.append(len({i for i, _ in found} & set(exact)) / K)
        assert found[0][0] == exact[0]
        for memory_id, distance in found:
            row = mirror.matrix[mirror.rows[memory_id]]
            assert distance == pytest.approx(1.0 - float(row @ query), abs=1e-6)
        assert [d for _, d in found] == sorted(d for _, d in found)
    assert mirror.quantized is not None  # the 8-bit path answered
    print(f"found {np.mean(shares):.4f} (lowest {min(shares):.2f}) of the exact top {K}")
    assert np.mean(shares) >= 0.99, shares


def test_rows_written_and_removed_after_quantising_are_searched_as_they_are_now(mirror):
    mirror, rng = mirror
    query = _query_near(mirror, rng)
    mirror.nearest(query, K)
    assert mirror.quantized is not None
    # A new row equal to the query, and the old nearest removed.
    old_first = _exact(mirror, query, 1)[0]
    mirror.put("f" * 32, query.copy())
    mirror.remove(old_first)
    found = mirror.nearest(query, K)
    assert found[0][0] == "f" * 32
    assert old_first not in {i for i, _ in found}
    # A row moved into the removed one's place is still found where it is.
    moved = mirror.ids[mirror.rows[found[1][0]]]
    assert mirror.matrix[mirror.rows[moved]] @ query == pytest.approx(1.0 - found[1][1], abs=1e-6)


def test_many_writes_after_quantising_make_it_quantise_anew(mirror):
    mirror, rng = mirror
    mirror.nearest(_query_near(mirror, rng), K)
    first = mirror.quantized
    for i, vector in enumerate(_e5_like(rng, ROWS // 2)):
        mirror.put(f"{ROWS + i:032x}", vector)
    query = _query_near(mirror, rng)
    found = mirror.nearest(query, K)
    assert mirror.quantized is not first
    exact = _exact(mirror, query, K)
    assert len({i for i, _ in found} & set(exact)) >= 0.98 * K


def test_a_small_partition_stays_exact(monkeypatch):
    rng = np.random.default_rng(4)
    mirror = PartitionMirror(DIMENSIONS)
    mirror.replace_all([f"{i:032x}" for i in range(500)], _e5_like(rng, 500))
    query = _query_near(mirror, rng)
    assert [i for i, _ in mirror.nearest(query, K)] == _exact(mirror, query, K)
    assert mirror.quantized is None
