"""recall@k per query, averaged overall and by category; latency percentiles."""

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from bench.locomo import CATEGORIES, Question

KS = (5, 10)


def recall_at(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return len(evidence & set(ranked[:k])) / len(evidence)


def summarise(questions: Sequence[Question], rankings: Sequence[Sequence[str]]) -> dict:
    """{"overall": {"recall@5": .., "recall@10": .., "n": ..}, "by_category": {name: {...}}}"""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, question in enumerate(questions):
        groups[CATEGORIES[question.category]].append(i)

    def block(indices: list[int]) -> dict:
        out = {"n": len(indices)}
        for k in KS:
            values = [recall_at(rankings[i], questions[i].evidence, k) for i in indices]
            out[f"recall@{k}"] = round(float(np.mean(values)), 4) if values else None
        return out

    return {
        "overall": block(list(range(len(questions)))),
        "by_category": {
            name: block(groups[name]) for name in CATEGORIES.values() if name in groups
        },
    }


def latency_summary(seconds: Sequence[float]) -> dict:
    ms = np.asarray(seconds) * 1000.0
    return {
        "n": int(ms.size),
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "mean_ms": round(float(ms.mean()), 2),
        "max_ms": round(float(ms.max()), 2),
    }
