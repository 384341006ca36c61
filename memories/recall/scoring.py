"""The one scoring function of every read path.

score = R · (1 − band + 2·band·m) · (1 + scope_bonus),  R = w_relevance·relevance
m     = (w_importance·importance + w_recency·recency + w_frequency·frequency)
        / (w_importance + w_recency + w_frequency)          (0..1; 0.5 when all three are 0)

Need ranks: R, the evidence that a memory answers the request, sets the score; importance,
recency and popularity move it within ±band of R (RECALL_ADJUSTMENT_BAND, 0.15), and a more
specific scope by its share of R. A memory whose relevance is more than (1 + band)/(1 − band)
times another's (1.35 with 0.15) always ranks above it, however important or fresh the other.

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
A memory linked to an entity the query names (entities.py) is relevant on that evidence
(entity_pass) and its relevance is raised by it (with_entity); what that adds to R·(1 − band)
is the `entity` part, the rest the `relevance` part.
The parts returned are the terms of the expanded product (relevance R·(1 − band), importance
R·2·band·w_importance/W·importance, and so on, scope_bonus the scope's share of the rest), so
they add up to the score.
"""

import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

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
    adjustment_band: float = 0.15
    keyword_pass: float = 1.0
    entity_weight: float = 0.6
    entity_pass: float = 0.5
    language_offset: float = 0.0

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
            adjustment_band=settings.RECALL_ADJUSTMENT_BAND,
            keyword_pass=settings.RECALL_KEYWORD_PASS,
            entity_weight=settings.RECALL_ENTITY_WEIGHT,
            entity_pass=settings.RECALL_ENTITY_PASS,
            language_offset=settings.RECALL_LANGUAGE_OFFSET,
        )


@dataclass(frozen=True)
class Score:
    total: float
    relevance: float
    importance: float
    recency: float
    frequency: float
    scope_bonus: float
    entity: float = 0.0

    def parts(self) -> dict[str, float]:
        return {
            "relevance": self.relevance,
            "entity": self.entity,
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


class Gate(StrEnum):
    """What the relevance gate decided of a candidate, and on which evidence (see the module
    docstring); the explanation of recall (explain=true) shows it in words (GATE_REASONS)."""

    ENTITY = "entity"
    WORDS = "words"
    MEANING = "meaning"
    NEAREST = "nearest"
    NO_WORDS = "no_words"
    FAR_NOT_ABOUT_USER = "far_not_about_user"
    FAR_FROM_NEAREST = "far_from_nearest"

    @property
    def passed(self) -> bool:
        return self in _PASSED


_PASSED = frozenset({Gate.ENTITY, Gate.WORDS, Gate.MEANING, Gate.NEAREST})

GATE_REASONS = {
    Gate.ENTITY: "names someone or something this memory is about",
    Gate.WORDS: "its words are in this memory",
    Gate.MEANING: "close enough in meaning to the question",
    Gate.NEAREST: "the question is about the user and this memory is among the nearest to it",
    Gate.NO_WORDS: "only the question's words can let a memory in here, and none of them is "
    "in this memory",
    Gate.FAR_NOT_ABOUT_USER: "not about the user and too far from the question",
    Gate.FAR_FROM_NEAREST: "the question is about the user, but this memory is too far from "
    "it and from the memories nearest to it",
}


def gate(
    *,
    similarity: float | None,
    best_similarity: float | None,
    keyword_evidence: float,
    about_user: float,
    weights: Weights,
    entity_evidence: float = 0.0,
) -> Gate:
    """See the module docstring. Similarities are calibrated ones; None means that only
    words count (no embedder, or similarity may not let a memory in)."""
    if entity_evidence >= weights.entity_pass:
        return Gate.ENTITY
    if similarity is None:
        passed = keyword_evidence > 0 and keyword_evidence >= weights.keyword_floor
        return Gate.WORDS if passed else Gate.NO_WORDS
    if keyword_evidence >= weights.keyword_pass:
        return Gate.WORDS
    evidence = (
        similarity
        + weights.about_user_weight * min(about_user, weights.about_user_cap)
        + weights.keyword_weight * keyword_evidence
    )
    if evidence >= weights.similarity_floor:
        return Gate.MEANING
    if about_user < weights.about_user_floor:
        return Gate.FAR_NOT_ABOUT_USER
    if (
        similarity >= weights.near_best_floor
        and best_similarity is not None
        and similarity >= best_similarity - weights.near_best_band
    ):
        return Gate.NEAREST
    return Gate.FAR_FROM_NEAREST


def is_relevant(
    *,
    similarity: float | None,
    best_similarity: float | None,
    keyword_evidence: float,
    about_user: float,
    weights: Weights,
    entity_evidence: float = 0.0,
) -> bool:
    """Whether the gate lets the candidate through (gate)."""
    return gate(
        similarity=similarity,
        best_similarity=best_similarity,
        keyword_evidence=keyword_evidence,
        about_user=about_user,
        weights=weights,
        entity_evidence=entity_evidence,
    ).passed


def recency(
    *, updated_at: datetime, last_accessed_at: datetime | None, now: datetime, half_life_days
) -> float:
    latest = max(updated_at, last_accessed_at) if last_accessed_at else updated_at
    days = max(0.0, (now - latest).total_seconds() / 86400.0)
    return 2.0 ** (-days / half_life_days)


def frequency(access_count: int) -> float:
    return min(1.0, math.log1p(access_count) / math.log(101))


def with_entity(relevance_value: float, entity_evidence: float, weights: Weights) -> float:
    """The relevance of a memory whose entity the query names: entity evidence fills
    entity_weight of what similarity and keywords left (0..1 still)."""
    return relevance_value + (1.0 - relevance_value) * weights.entity_weight * entity_evidence


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
    entity_evidence: float = 0.0,
) -> Score:
    """See the module docstring: relevance_value (0..1) sets the score, the other signals
    move it within the band; entity_evidence raises the relevance (with_entity), and what it
    adds is the `entity` part."""
    combined = with_entity(relevance_value, entity_evidence, weights)
    evidence = weights.relevance * combined
    band = weights.adjustment_band
    signals = (
        (weights.importance, importance),
        (
            weights.recency,
            recency(
                updated_at=updated_at,
                last_accessed_at=last_accessed_at,
                now=now,
                half_life_days=weights.half_life_days,
            ),
        ),
        (weights.frequency, frequency(access_count)),
    )
    total_weight = sum(weight for weight, _ in signals)
    if total_weight > 0:
        moved = [evidence * 2.0 * band * weight / total_weight * value for weight, value in signals]
        base = evidence * (1.0 - band)
    else:  # nothing to move by: the middle of the band
        moved = [0.0, 0.0, 0.0]
        base = evidence
    bonus = (base + sum(moved)) * weights.scope_bonus.get(scope, 0.0)
    # The base splits into what similarity and keywords earned and what the entity added.
    entity = base * (combined - relevance_value) / combined if combined > 0 else 0.0
    return Score(
        total=base + sum(moved) + bonus,
        relevance=base - entity,
        importance=moved[0],
        recency=moved[1],
        frequency=moved[2],
        scope_bonus=bonus,
        entity=entity,
    )
