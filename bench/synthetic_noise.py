"""How much noise the synthetic memories get, per embedder: as much as makes them as hard to
search as real conversation turns embedded by the same model.

    python -m bench calibrate --data ../shared/data/locomo-dev.json

A synthetic memory's vector is the mean of its content words' vectors plus Gaussian noise
(bench/synthetic.py). The noise decides how hard the set is for a graph index: with too much,
every memory is about as far from each other one and the set looks like random points in all
384 dimensions, which no real text does. The yardstick is the local intrinsic dimensionality
(LID, the maximum-likelihood estimate of Levina and Bickel over the 20 nearest): LOCOMO's dev
turns, embedded by the model, against synthetic memories of the same count. The noise whose
LID matches is written to bench/results/synthetic-noise.json, which bench/synthetic.py reads.

The generator's word combinations put a floor under its LID: a model whose real turns lie
lower than that floor (all-MiniLM-L6-v2) gets the smallest noise searched, and stays a
little harder than real text."""

import argparse
import json
import time

import numpy as np

from bench import common
from bench.synthetic import Corpus, embedded_vocabulary

LID_NEIGHBOURS = 20
LID_SAMPLE = 1000
# The search range: 0.6 was the fixed noise before this calibration.
NOISE_LOW, NOISE_HIGH = 0.01, 1.0


def local_intrinsic_dimension(vectors: np.ndarray, *, k: int = LID_NEIGHBOURS) -> float:
    """Mean MLE LID of up to LID_SAMPLE of the (unit) vectors among all of them: for each,
    -1 / mean(log(d_i / d_k)) over its k nearest others (i < k)."""
    sample = vectors[: min(LID_SAMPLE, len(vectors))]
    cosine = sample @ vectors.T
    distances = np.sqrt(np.maximum(2.0 - 2.0 * cosine, 0.0))
    # A point is not its own neighbour; exact duplicates (distance 0) would make log blow up.
    distances[np.arange(len(sample)), np.arange(len(sample))] = np.inf
    distances = np.maximum(distances, 1e-6)
    nearest = np.sort(distances, axis=1)[:, :k]
    ratios = np.log(nearest[:, :-1] / nearest[:, -1:])
    return float(np.mean(-1.0 / np.mean(ratios, axis=1)))


def noise_matching(
    word_vectors: dict[str, np.ndarray], target_lid: float, *, count: int, steps: int = 14
) -> tuple[float, float]:
    """The noise (in [NOISE_LOW, NOISE_HIGH]) whose synthetic memories of `count` have the LID
    nearest `target_lid`, by bisection (LID grows with the noise); returns (noise, its LID).
    Every try draws the same memories (one seed), so only the noise differs."""

    def lid_at(noise: float) -> float:
        _, vectors = Corpus(word_vectors, noise=noise).memories(count)
        return local_intrinsic_dimension(vectors)

    low, high = NOISE_LOW, NOISE_HIGH
    lid_low, lid_high = lid_at(low), lid_at(high)
    if target_lid <= lid_low:
        return low, lid_low
    if target_lid >= lid_high:
        return high, lid_high
    for _ in range(steps):
        middle = (low + high) / 2
        lid_middle = lid_at(middle)
        if lid_middle < target_lid:
            low, lid_low = middle, lid_middle
        else:
            high, lid_high = middle, lid_middle
    if abs(lid_low - target_lid) <= abs(lid_high - target_lid):
        return round(low, 4), lid_low
    return round(high, 4), lid_high


def main(argv: list[str]) -> None:
    import os

    import django

    parser = argparse.ArgumentParser(prog="python -m bench calibrate", description=__doc__)
    parser.add_argument("--data", required=True, help="LOCOMO dev JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-calibrate")
    django.setup()
    from bench import locomo
    from memories.embeddings.embedders import get_embedder

    started = time.perf_counter()
    embedder = get_embedder()
    turns = [turn.text for conversation in locomo.load(args.data) for turn in conversation.turns]
    real = np.asarray(embedder.embed(turns), dtype=np.float32)
    word_vectors = embedded_vocabulary(embedder)
    real_lid = local_intrinsic_dimension(real)
    noise, synthetic_lid = noise_matching(word_vectors, real_lid, count=len(real))
    noises = common.read_synthetic_noises()
    noises[embedder.model_name] = {
        "noise": noise,
        "lid_locomo_turns": round(real_lid, 2),
        "lid_synthetic": round(synthetic_lid, 2),
        "turns": len(real),
        "git": common.git_commit(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    common.SYNTHETIC_NOISE_FILE.write_text(json.dumps(noises, indent=1, sort_keys=True) + "\n")
    print(
        f"{embedder.model_name}: noise {noise} (LID: LOCOMO turns {real_lid:.1f}, "
        f"synthetic {synthetic_lid:.1f}) -> {common.SYNTHETIC_NOISE_FILE}"
    )
