"""Why recall returned what it returned (explain=true on search and context, and the review
UI's recall playground): the query as recall read it, and every candidate it considered,
returned or not, with its score parts and the decision in words.

An explained recall counts as no access: it is a look at recall, not a use of its memories."""

import functools
import math
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from memories.models import Memory
from memories.recall import scoring

# A candidate's decision, beyond the gate's (scoring.GATE_REASONS).
RETURNED = "returned"
EXCLUDED = "excluded"
BELOW_TOP_K = "relevant, but ranked below the top {top_k}"
BELOW_MIN_RELEVANCE = "relevance {relevance:.2f} is below min_relevance {min_relevance:.2f}"
NOT_CLOSE_TO_BEST = (
    "relevant, but its evidence is under {share:.0%} of the best memory's: the hint holds only "
    "the memories close to the best"
)
PINNED = "pinned: at the head of the hint whatever the question"
OVER_BUDGET = "relevant, but the hint's budget of characters was spent"
EXPIRED = "expired at {expires_at:%Y-%m-%d %H:%M} UTC: recall never returns it"
SMALL_TALK = (
    "small talk with the assistant: only its other words can let a memory in, and similarity "
    "only ranks"
)
ABOUT_OTHERS = (
    "about someone else or anyone, not the user: only its other words can let a memory in, "
    "and similarity only ranks"
)


@dataclass
class Considered:
    """One candidate: its evidence, its score (what it would have scored when the gate left
    it out) and what became of it."""

    memory_id: UUID
    similarity: float | None  # raw cosine similarity to the query; None without an embedder
    calibrated_similarity: float | None  # in standard deviations (calibration.py)
    keyword_evidence: float
    entity_evidence: float
    gate: scoring.Gate | None  # None for a memory that was no candidate (expired)
    score: scoring.Score | None
    decision: str = EXCLUDED
    reason: str = ""
    memory: Memory | None = None  # read once for all candidates (with_memories)


@dataclass
class QueryReading:
    """What recall made of the query."""

    read: str  # the part of the query recall read (the end of a long message)
    cut: bool  # whether that is less than the whole query
    language: str | None  # ISO 639-1 code, or None when too short or unsure
    language_probability: float | None
    about_user_probability: float | None  # None without an embedder
    about_user: bool  # the probability reached the gate's floor
    read_as: str | None = None  # SMALL_TALK or ABOUT_OTHERS, else None


@dataclass
class Explanation:
    query: QueryReading
    candidates: list[Considered] = field(default_factory=list)


def about_user_probability(log_odds: float) -> float:
    """The classifier's log-odds that a question is about the user, as a probability."""
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, log_odds))))


# Below this, a guess of the language is shown as unknown: a word or two is often too little.
LANGUAGE_MIN_PROBABILITY = 0.4


@functools.cache
def _identifier():
    # py3langid ships its model in the package (no download); loading it takes ~0.5 s, once.
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect_language(text: str) -> tuple[str | None, float | None]:
    """The language of `text` and the probability of that guess; (None, p) when the guess
    is under LANGUAGE_MIN_PROBABILITY, (None, None) for text without letters."""
    if not any(character.isalpha() for character in text):
        return None, None
    language, probability = _identifier().classify(text)
    probability = float(probability)
    return (language if probability >= LANGUAGE_MIN_PROBABILITY else None), probability


def expired_reason(expires_at: datetime) -> str:
    return EXPIRED.format(expires_at=expires_at)


def in_order(candidates: list[Considered]) -> list[Considered]:
    """Returned first (the pinned ones at their head, as in the hint), then the rest, each
    part best score first."""
    return sorted(
        candidates,
        key=lambda c: (
            c.decision != RETURNED,
            c.reason != PINNED,
            -(c.score.total if c.score is not None else 0.0),
        ),
    )


def with_memories(explanation: Explanation) -> Explanation:
    """The explanation with each candidate's memory read (one query); a candidate whose
    memory was deleted meanwhile is left out."""
    memories = Memory.objects.in_bulk([c.memory_id for c in explanation.candidates])
    for considered in explanation.candidates:
        considered.memory = memories.get(considered.memory_id)
    explanation.candidates = [c for c in explanation.candidates if c.memory is not None]
    return explanation
