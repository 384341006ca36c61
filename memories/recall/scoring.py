"""The one scoring function of every read path.

score = w_relevance·relevance + w_importance·importance + w_recency·recency
        + w_frequency·frequency + scope_bonus

relevance  = share·min(1, calibrated similarity / span) + (1 − share)·keyword score (BM25 / best
             BM25 of the query); without an embedder, keyword score × confidence

The calibrated similarity (calibration.py) is the cosine similarity in standard deviations
above the question's similarity to a fixed background of ordinary memories: raw cosines of
one model crowd together (multilingual-e5-small gives any memory 0.75-0.85 for any question)
and mean different things for different questions.
recency    = 2^(−days / half-life) since the later of last update and last access
frequency  = min(1, ln(1 + access_count) / ln(101))

A candidate is relevant when either holds:
- its evidence reaches the similarity floor, where
      evidence = calibrated similarity + about_user_weight · min(about_user, about_user_cap)
                 + keyword_weight · keyword evidence
  (about_user: the log-odds that the question is about the user, calibration.py; keyword
  evidence: the share of the query's word weight the memory matched, bm25.py). A memory
  close to a question about the world ("who wrote the Odyssey?" and a car called Odyssey)
  needs far more similarity than one close to a question about the user; the cap keeps a
  question plainly about the user ("where do I live?") from bringing every memory along;
- the question is about the user (about_user reaches about_user_floor) and the memory's
  calibrated similarity reaches the near-best floor within the near-best band of the
  question's best: a vague request ("what should I cook tonight?") is far from every
  memory, and the memories nearest to it are the ones it is about.
Without an embedder, keyword evidence alone decides (keyword_floor).
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
    about_user_weight: float
    about_user_floor: float
    about_user_cap: float
    keyword_weight: float
    similarity_span: float
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
            about_user_weight=settings.RECALL_ABOUT_USER_WEIGHT,
            about_user_floor=settings.RECALL_ABOUT_USER_FLOOR,
            about_user_cap=settings.RECALL_ABOUT_USER_CAP,
            keyword_weight=settings.RECALL_KEYWORD_WEIGHT,
            similarity_span=settings.RECALL_SIMILARITY_SPAN,
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
    *,
    similarity: float | None,
    keyword: float,
    confidence: float,
    vector_share: float,
    span: float,
) -> float:
    """similarity is the calibrated one; None means no embedder: rank by keyword and
    confidence."""
    if similarity is None:
        return keyword * confidence
    similarity = min(1.0, max(0.0, similarity / span))
    return vector_share * similarity + (1.0 - vector_share) * keyword


def is_relevant(
    *,
    similarity: float | None,
    best_similarity: float | None,
    keyword_evidence: float,
    about_user: float,
    weights: Weights,
) -> bool:
    """See the module docstring. Similarities are calibrated ones; None means no embedder
    (keyword evidence only)."""
    if similarity is None:
        return keyword_evidence > 0 and keyword_evidence >= weights.keyword_floor
    evidence = (
        similarity
        + weights.about_user_weight * min(about_user, weights.about_user_cap)
        + weights.keyword_weight * keyword_evidence
    )
    if evidence >= weights.similarity_floor:
        return True
    return (
        about_user >= weights.about_user_floor
        and similarity >= weights.near_best_floor
        and best_similarity is not None
        and similarity >= best_similarity - weights.near_best_band
    )


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
