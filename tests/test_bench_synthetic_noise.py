"""The benchmark's synthetic memories: the intrinsic-dimensionality yardstick and the noise
calibration that makes them as hard to search as real text (bench/synthetic_noise.py)."""

import json

import numpy as np
import pytest

from bench import common, synthetic_noise
from bench.synthetic import Corpus, noise_for, vocabulary
from bench.synthetic_noise import local_intrinsic_dimension, noise_matching


def unit_points_in(dimensions: int, count: int = 3000, *, seed: int = 1) -> np.ndarray:
    """Points spread in a `dimensions`-dimensional subspace of 384, on the unit sphere."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.normal(size=(384, dimensions)))
    points = rng.normal(size=(count, dimensions)) @ basis.T
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def word_vectors_in_a_cone(seed: int = 3) -> dict[str, np.ndarray]:
    """Unit word vectors that share a common direction, as a text embedder's words do."""
    rng = np.random.default_rng(seed)
    common = rng.normal(size=384)
    words = {}
    for word in vocabulary():
        vector = common / np.linalg.norm(common) + 0.8 * rng.normal(size=384) / np.sqrt(384)
        words[word] = (vector / np.linalg.norm(vector)).astype(np.float32)
    return words


def test_lid_tells_the_dimensionality_of_the_points():
    # Points on the unit sphere of a d-dimensional subspace lie on a (d - 1)-manifold.
    low, middle, high = (local_intrinsic_dimension(unit_points_in(d)) for d in (5, 12, 40))
    assert 3 <= low <= 6
    assert 8 <= middle <= 13
    assert low < middle < high


def test_lid_ignores_exact_duplicates_and_the_point_itself():
    points = unit_points_in(12)
    doubled = np.concatenate([points, points])
    assert np.isfinite(local_intrinsic_dimension(doubled))


def test_more_noise_makes_the_memories_harder():
    words = word_vectors_in_a_cone()
    lids = [
        local_intrinsic_dimension(Corpus(words, noise=noise).memories(1500)[1])
        for noise in (0.02, 0.2, 0.6)
    ]
    assert lids == sorted(lids)
    assert lids[2] > 2 * lids[0]


def test_calibration_finds_the_noise_of_a_set_it_did_not_draw():
    words = word_vectors_in_a_cone()
    # "Real" memories from the same generator, another seed: the noise found is theirs.
    _, real = Corpus(words, noise=0.3, seed=99).memories(1500)
    noise, lid = noise_matching(words, local_intrinsic_dimension(real), count=1500)
    assert noise == pytest.approx(0.3, abs=0.06)
    assert lid == pytest.approx(local_intrinsic_dimension(real), rel=0.1)


def test_calibration_stops_at_the_generators_floor():
    words = word_vectors_in_a_cone()
    noise, lid = noise_matching(words, 1.0, count=800)
    assert noise == synthetic_noise.NOISE_LOW
    assert lid > 1.0


def test_an_embedder_without_calibration_is_refused(tmp_path, monkeypatch):
    noise_file = tmp_path / "synthetic-noise.json"
    noise_file.write_text(json.dumps({"known-model": {"noise": 0.05}}))
    monkeypatch.setattr(common, "SYNTHETIC_NOISE_FILE", noise_file)
    assert noise_for("known-model") == 0.05
    with pytest.raises(SystemExit, match="python -m bench calibrate"):
        noise_for("another-model")


def test_the_default_embedders_are_calibrated():
    # The served and tenants benches refuse an uncalibrated embedder; the repository's
    # calibration covers the local models the service ships.
    noises = common.read_synthetic_noises()
    for model in ("multilingual-e5-small-int8", "all-MiniLM-L6-v2-int8"):
        assert 0 < noises[model]["noise"] < synthetic_noise.NOISE_HIGH
