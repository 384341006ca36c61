"""Hybrid recall: nearest neighbours united with keyword hits, in the caller's scopes, scored
by one function, cut to top_k; every hit counts as an access. Each stage's time goes to the
recall stage histogram of /metrics and the request's Server-Timing header."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.utils import timezone

from memories.embeddings.embedders import embed_query
from memories.filters.language import Node
from memories.models import CarrierIds, Memory
from memories.recall import scoring
from memories.recall.access import memory_record_access
from memories.recall.addressed import to_the_assistant
from memories.recall.bm25 import KeywordHit
from memories.recall.calibration import Calibration, calibrate
from memories.recall.candidates import (
    Candidate,
    Filtered,
    filtered,
    find_candidates,
    keyword_hits,
)
from memories.recall.entities import entity_evidence, query_about_others
from ops.metrics import recall_stage


@dataclass
class RecallHit:
    memory: Memory
    score: scoring.Score


def memory_recall(
    *,
    query: str,
    scopes: Sequence[CarrierIds],
    top_k: int,
    record_access: bool = True,
    weights: scoring.Weights | None = None,
    query_vector: Sequence[float] | None = None,
    as_of: datetime | None = None,
    min_relevance: float | None = None,
    memory_filter: Node | None = None,
) -> list[RecallHit]:
    """The top_k active memories of these scopes for `query`, best first; with as_of, the
    memories that were current at that moment (candidates.valid_at). The relevance gate
    (scoring.is_relevant) decides which candidates count; with min_relevance (0..1), the
    candidates whose relevance reaches it do instead, so 0 gives the top_k candidates
    whatever the gate says. With a filter (memories.filters), only the memories it matches
    are candidates, in both stages (candidates.filtered), so top_k is full when enough of
    them are relevant. Raises EmbedderUnavailable when the configured embedder fails."""
    weights = weights or scoring.Weights.from_settings()
    k = settings.RECALL_CANDIDATES
    vector = query_vector
    if vector is None:
        # Not beside the keyword search on another thread: measured through gunicorn, the
        # two slowed each other down as much as they overlapped (docs/benchmarks.md).
        with recall_stage("embedding"):
            vector = embed_query(query)
    within = None
    if memory_filter is not None:
        with recall_stage("filter"):
            within = filtered(memory_filter=memory_filter, scopes=scopes, as_of=as_of)
    with recall_stage("keyword"):
        # A question about someone else's relations or anyone's ("Who was Napoleon's
        # brother?", "How many legs does a dog have?"): the user's memories about brothers
        # and dogs are close in meaning and no answer. Its other words must match.
        # The question measured against the references (calibration.py) tells whether it
        # is about the user; the entity evidence counts relation words only when it is.
        calibration = calibrate(vector)
        about_user = calibration is not None and calibration.about_user >= weights.about_user_floor
        keyword, entity, similarity_gates = _word_evidence(
            query=query,
            scopes=scopes,
            k=k,
            about_user=about_user,
            weights=weights,
            within=within,
        )
    with recall_stage("candidates"):
        candidates = find_candidates(
            vector=vector,
            scopes=scopes,
            k=k,
            keyword=keyword,
            as_of=as_of,
            entity=entity,
            within=within,
        )
    with recall_stage("scoring"):
        scored = rank(
            candidates,
            weights=weights,
            now=timezone.now(),
            top_k=top_k,
            calibration=calibration,
            min_relevance=min_relevance,
            similarity_gates=similarity_gates,
        )
    if not scored:
        return []

    top_ids = [memory_id for memory_id, _ in scored]
    if record_access:
        with recall_stage("access_write"):
            memories = {memory.id: memory for memory in memory_record_access(memory_ids=top_ids)}
    else:
        memories = Memory.objects.in_bulk(top_ids)
    # A memory deleted since it was scored is left out.
    return [
        RecallHit(memory=memories[memory_id], score=score)
        for memory_id, score in scored
        if memory_id in memories
    ]


def _word_evidence(
    *,
    query: str,
    scopes: Sequence[CarrierIds],
    k: int,
    about_user: bool,
    weights: scoring.Weights,
    within: Filtered | None = None,
) -> tuple[dict[UUID, KeywordHit[UUID]], dict[UUID, float], bool]:
    """(keyword hits, entity evidence, whether similarity may pass the gate). Small talk with
    the assistant ("what's your name?", "tell me a joke", addressed.to_the_assistant) is
    answered by no memory, however close in meaning, unless its words find one. A question
    about a stranger's relations or anyone's ("Who was Napoleon's brother?", "How many legs
    does a dog have?", entities.query_about_others) is close in meaning to the user's
    memories about brothers and dogs and is no question about them: its other words must
    match, and similarity only ranks. Unless those words find someone the memories know (an
    entity's name, a keyword hit: "What does Sofia's brother do?"): then it is read as any
    other question."""
    small_talk = to_the_assistant(query)
    if small_talk is not None:
        # Small talk with the assistant (addressed.py): similarity only ranks, unless the
        # words besides the small talk find what a memory holds ("tell me a joke about jazz").
        keyword = keyword_hits(query=small_talk, scopes=scopes, k=k, within=within)
        if not any(hit.evidence >= weights.keyword_floor for hit in keyword.values()):
            return keyword, entity_evidence(query=query, scopes=scopes), False
        # Read as any other question by those words: "jazz", not "tell me a joke about".
        query = small_talk
    about_others = query_about_others(query, about_user=about_user)
    if about_others is not None:
        keyword = keyword_hits(query=about_others, scopes=scopes, k=k, within=within)
        entity = entity_evidence(query=query, scopes=scopes)
        known = entity or any(hit.evidence >= weights.keyword_floor for hit in keyword.values())
        if not known:
            return keyword, entity, False
    keyword = keyword_hits(query=query, scopes=scopes, k=k, within=within)
    entity = entity_evidence(query=query, scopes=scopes, about_user=about_user)
    return keyword, entity, True


def close_to_best(hits: Sequence[RecallHit], share: float) -> list[RecallHit]:
    """The hits whose relevance is at least `share` of the best one's, in order: what the
    hint holds, so that a request served by one or two memories does not get filler lines
    because the budget has room."""

    def evidence(hit: RecallHit) -> float:
        return hit.score.relevance + hit.score.entity

    best = max((evidence(hit) for hit in hits), default=0.0)
    return [hit for hit in hits if evidence(hit) >= share * best]


def rank(
    candidates: Sequence[Candidate],
    *,
    weights: scoring.Weights,
    now: datetime,
    top_k: int,
    calibration: Calibration | None,
    min_relevance: float | None = None,
    similarity_gates: bool = True,
) -> list[tuple[UUID, scoring.Score]]:
    """The top_k relevant candidates with their scores, best first: those the gate lets
    through, or with min_relevance those whose relevance reaches it. Without a calibration
    (no embedder) similarities are not read: keywords and confidence decide; without
    `similarity_gates`, the gate reads keywords and entities alone, as without an embedder,
    and similarity still ranks what it lets through."""
    similarities = [
        calibration.of(c.similarity)
        if calibration is not None and c.similarity is not None
        else None
        for c in candidates
    ]
    best_similarity = max((s for s in similarities if s is not None), default=None)
    scored = []
    about_user = calibration.about_user if calibration is not None else 0.0
    for candidate, similarity in zip(candidates, similarities, strict=True):
        # The gate first: most candidates stop there, before their relevance is computed.
        if min_relevance is None and not scoring.is_relevant(
            similarity=similarity if similarity_gates else None,
            best_similarity=best_similarity,
            keyword_evidence=candidate.keyword_evidence,
            about_user=about_user,
            weights=weights,
            entity_evidence=candidate.entity,
        ):
            continue
        relevance = scoring.relevance(
            similarity=similarity,
            keyword=candidate.keyword,
            confidence=candidate.confidence,
            vector_share=weights.vector_share,
            span=weights.similarity_span,
        )
        if (
            min_relevance is not None
            and scoring.with_entity(relevance, candidate.entity, weights) < min_relevance
        ):
            continue
        score = scoring.score(
            relevance_value=relevance,
            importance=candidate.importance,
            updated_at=candidate.updated_at,
            last_accessed_at=candidate.last_accessed_at,
            access_count=candidate.access_count,
            scope=candidate.scope,
            now=now,
            weights=weights,
            entity_evidence=candidate.entity,
        )
        scored.append((candidate.memory_id, score, candidate.importance, candidate.updated_at))
    # Equal scores (most often memories with no evidence at all, scored 0, which a question
    # plainly about the user lets through) go by importance, then the latest update, then id
    # (UUID.int orders as its text does, without building the text): what the product marked
    # important first, and the same order on every run.
    scored.sort(key=lambda row: (-row[1].total, -row[2], -row[3].timestamp(), row[0].int))
    return [(memory_id, score) for memory_id, score, _, _ in scored[:top_k]]
