"""The one scoring function of every read path.

score = w_relevance·relevance + w_importance·importance + w_recency·recency
        + w_frequency·frequency + scope_bonus

relevance  = share·cosine similarity + (1 − share)·keyword score (BM25 / best BM25 of the query);
             without an embedder, keyword score × confidence
recency    = 2^(−days / half-life) since the later of last update and last access
frequency  = min(1, ln(1 + access_count) / ln(101))

A candidate is relevant when any of these holds, each on its own scale:
- its similarity reaches the similarity floor;
- its similarity reaches the lower near-best floor and is within the near-best band of the
  query's best similarity: a vague question ("tell me about my family") is far from every
  memory, and the memories nearest to it are the ones it is about;
- its keyword evidence (the share of the query's word weight it matched, bm25.py) reaches
  the keyword floor: a memory sharing a rare word with the question counts when its
  vector is far.
Others are dropped whatever their other signals, so importance, recency and popularity
re-order relevant memories but never bring in others.
The parts returned are the weighted terms, so they add up to the score.
"""

import math
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings


@dataclass(frozen=True)
class Weights:
    relevance: float
    importance: float
    recency: float
    frequency: float
    vector_share: float
    half_life_days: float
    similarity_floor: float
    near_best_floor: float
    near_best_band: float
    keyword_floor: float
    scope_bonus: dict

    @classmethod
    def from_settings(cls) -> "Weights":
        return cls(
            relevance=settings.RECALL_WEIGHT_RELEVANCE,
            importance=settings.RECALL_WEIGHT_IMPORTANCE,
            recency=settings.RECALL_WEIGHT_RECENCY,
            frequency=settings.RECALL_WEIGHT_FREQUENCY,
            vector_share=settings.RECALL_VECTOR_SHARE,
            half_life_days=settings.RECALL_RECENCY_HALF_LIFE_DAYS,
            similarity_floor=settings.RECALL_SIMILARITY_FLOOR,
            near_best_floor=settings.RECALL_NEAR_BEST_FLOOR,
            near_best_band=settings.RECALL_NEAR_BEST_BAND,
            keyword_floor=settings.RECALL_KEYWORD_FLOOR,
            scope_bonus=dict(settings.RECALL_SCOPE_BONUS),
        )


@dataclass(frozen=True)
class Score:
    total: float
    relevance: float
    importance: float
    recency: float
    frequency: float
    scope_bonus: float

    def parts(self) -> dict[str, float]:
        return {
            "relevance": self.relevance,
            "importance": self.importance,
            "recency": self.recency,
            "frequency": self.frequency,
            "scope_bonus": self.scope_bonus,
        }


def relevance(
    *, similarity: float | None, keyword: float, confidence: float, vector_share: float
) -> float:
    """similarity None means no embedder: rank by keyword and confidence."""
    if similarity is None:
        return keyword * confidence
    similarity = min(1.0, max(0.0, similarity))
    return vector_share * similarity + (1.0 - vector_share) * keyword


def is_relevant(
    *,
    similarity: float | None,
    best_similarity: float | None,
    keyword_evidence: float,
    weights: Weights,
) -> bool:
    """See the module docstring; similarity None means no embedder (keyword evidence only)."""
    if similarity is not None:
        if similarity >= weights.similarity_floor:
            return True
        if (
            similarity >= weights.near_best_floor
            and best_similarity is not None
            and similarity >= best_similarity - weights.near_best_band
        ):
            return True
    return keyword_evidence > 0 and keyword_evidence >= weights.keyword_floor


def recency(
    *, updated_at: datetime, last_accessed_at: datetime | None, now: datetime, half_life_days
) -> float:
    latest = max(updated_at, last_accessed_at) if last_accessed_at else updated_at
    days = max(0.0, (now - latest).total_seconds() / 86400.0)
    return 2.0 ** (-days / half_life_days)


def frequency(access_count: int) -> float:
    return min(1.0, math.log1p(access_count) / math.log(101))


def score(
    *,
    relevance_value: float,
    importance: float,
    updated_at: datetime,
    last_accessed_at: datetime | None,
    access_count: int,
    scope: str,
    now: datetime,
    weights: Weights,
) -> Score:
    weighted_relevance = weights.relevance * relevance_value
    weighted_importance = weights.importance * importance
    weighted_recency = weights.recency * recency(
        updated_at=updated_at,
        last_accessed_at=last_accessed_at,
        now=now,
        half_life_days=weights.half_life_days,
    )
    weighted_frequency = weights.frequency * frequency(access_count)
    bonus = weights.scope_bonus.get(scope, 0.0)
    return Score(
        total=weighted_relevance
        + weighted_importance
        + weighted_recency
        + weighted_frequency
        + bonus,
        relevance=weighted_relevance,
        importance=weighted_importance,
        recency=weighted_recency,
        frequency=weighted_frequency,
        scope_bonus=bonus,
    )
