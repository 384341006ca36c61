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
from memories.models.languages import UNKNOWN, language_of
from memories.recall import explain as explain_
from memories.recall import scoring
from memories.recall.access import memory_record_access
from memories.recall.addressed import to_the_assistant
from memories.recall.bm25 import KeywordHit
from memories.recall.calibration import Calibration, calibrate
from memories.recall.candidates import (
    Candidate,
    Filtered,
    expired_not_archived,
    filtered,
    find_candidates,
    keyword_hits,
)
from memories.recall.entities import entity_evidence, query_about_others
from memories.recall.vector_store import get_vector_store
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
    hits, _ = _recall(
        query=query,
        scopes=scopes,
        top_k=top_k,
        record_access=record_access,
        weights=weights,
        query_vector=query_vector,
        as_of=as_of,
        min_relevance=min_relevance,
        memory_filter=memory_filter,
        explain=False,
    )
    return hits


def memory_recall_explained(
    *,
    query: str,
    scopes: Sequence[CarrierIds],
    top_k: int,
    weights: scoring.Weights | None = None,
    as_of: datetime | None = None,
    min_relevance: float | None = None,
    memory_filter: Node | None = None,
    whole_query: str | None = None,
) -> tuple[list[RecallHit], explain_.Explanation]:
    """memory_recall, and why (explain.py): the query's reading and every candidate
    considered, returned or not, with its score and the reason in words; the memories of
    these scopes that expired but are not archived yet are listed as excluded. Counts as no
    access. `whole_query` is what the caller sent when `query` is the part recall reads."""
    hits, explanation = _recall(
        query=query,
        scopes=scopes,
        top_k=top_k,
        record_access=False,
        weights=weights,
        query_vector=None,
        as_of=as_of,
        min_relevance=min_relevance,
        memory_filter=memory_filter,
        explain=True,
        whole_query=whole_query,
    )
    assert explanation is not None
    return hits, explain_.with_memories(explanation)


def _recall(
    *,
    query: str,
    scopes: Sequence[CarrierIds],
    top_k: int,
    record_access: bool,
    weights: scoring.Weights | None,
    query_vector: Sequence[float] | None,
    as_of: datetime | None,
    min_relevance: float | None,
    memory_filter: Node | None,
    explain: bool,
    whole_query: str | None = None,
) -> tuple[list[RecallHit], explain_.Explanation | None]:
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
        calibration = calibrate(
            vector,
            language=language_of(query) if weights.language_offset > 0 else UNKNOWN,
            language_offset=weights.language_offset,
        )
        about_user = calibration is not None and calibration.about_user >= weights.about_user_floor
        keyword, entity, similarity_gates, read_as = _word_evidence(
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
    considered: list[explain_.Considered] | None = [] if explain else None
    with recall_stage("scoring"):
        scored = rank(
            candidates,
            weights=weights,
            now=timezone.now(),
            top_k=top_k,
            calibration=calibration,
            min_relevance=min_relevance,
            similarity_gates=similarity_gates,
            considered=considered,
        )
    explanation = None
    if considered is not None:
        explanation = explain_.Explanation(
            query=_reading(query, whole_query, calibration, weights, read_as),
            candidates=[
                *considered,
                *_expired(vector=vector, scopes=scopes, as_of=as_of, within=within),
            ],
        )
    if not scored:
        return [], explanation

    top_ids = [memory_id for memory_id, _ in scored]
    if record_access:
        with recall_stage("access_write"):
            memories = {memory.id: memory for memory in memory_record_access(memory_ids=top_ids)}
    else:
        memories = Memory.objects.in_bulk(top_ids)
    # A memory deleted since it was scored is left out.
    hits = [
        RecallHit(memory=memories[memory_id], score=score)
        for memory_id, score in scored
        if memory_id in memories
    ]
    return hits, explanation


def _reading(
    query: str,
    whole_query: str | None,
    calibration: Calibration | None,
    weights: scoring.Weights,
    read_as: str | None,
) -> explain_.QueryReading:
    language, probability = explain_.detect_language(query)
    about = explain_.about_user_probability(calibration.about_user) if calibration else None
    whole = whole_query if whole_query is not None else query
    return explain_.QueryReading(
        read=query,
        cut=len(query) < len(whole.strip()),
        language=language,
        language_probability=probability,
        about_user_probability=about,
        about_user=calibration is not None and calibration.about_user >= weights.about_user_floor,
        read_as=read_as,
    )


def _expired(*, vector, scopes, as_of, within) -> list[explain_.Considered]:
    """The memories of these scopes that expired but are still active (the retention sweep
    archives them within minutes), with their similarity: recall never returns them, and an
    explanation says so. Only for a recall of now; bounded."""
    if as_of is not None or not scopes:
        return []
    memories = expired_not_archived(scopes=scopes, within=within)
    similarity = {}
    if vector is not None and memories:
        for hit in get_vector_store().distances(
            vector=vector,
            memory_ids=[memory.id for memory in memories],
            partitions=[scope.partition for scope in scopes],
        ):
            similarity[hit.memory_id] = hit.similarity
    return [
        explain_.Considered(
            memory_id=memory.id,
            similarity=similarity.get(memory.id),
            calibrated_similarity=None,
            keyword_evidence=0.0,
            entity_evidence=0.0,
            gate=None,
            score=None,
            reason=explain_.expired_reason(expires_at),
        )
        for memory, expires_at in memories.items()
    ]


def _word_evidence(
    *,
    query: str,
    scopes: Sequence[CarrierIds],
    k: int,
    about_user: bool,
    weights: scoring.Weights,
    within: Filtered | None = None,
) -> tuple[dict[UUID, KeywordHit[UUID]], dict[UUID, float], bool, str | None]:
    """(keyword hits, entity evidence, whether similarity may pass the gate, how the query
    was read when similarity may not: explain.SMALL_TALK or ABOUT_OTHERS). Small talk with
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
            entity = entity_evidence(query=query, scopes=scopes)
            return keyword, entity, False, explain_.SMALL_TALK
        # Read as any other question by those words: "jazz", not "tell me a joke about".
        query = small_talk
    about_others = query_about_others(query, about_user=about_user)
    if about_others is not None:
        keyword = keyword_hits(query=about_others, scopes=scopes, k=k, within=within)
        entity = entity_evidence(query=query, scopes=scopes)
        known = entity or any(hit.evidence >= weights.keyword_floor for hit in keyword.values())
        if not known:
            return keyword, entity, False, explain_.ABOUT_OTHERS
    keyword = keyword_hits(query=query, scopes=scopes, k=k, within=within)
    entity = entity_evidence(query=query, scopes=scopes, about_user=about_user)
    return keyword, entity, True, None


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
    considered: list[explain_.Considered] | None = None,
) -> list[tuple[UUID, scoring.Score]]:
    """The top_k relevant candidates with their scores, best first: those the gate lets
    through, or with min_relevance those whose relevance reaches it. Without a calibration
    (no embedder) similarities are not read: keywords and confidence decide; without
    `similarity_gates`, the gate reads keywords and entities alone, as without an embedder,
    and similarity still ranks what it lets through. Given a `considered` list, every
    candidate goes into it, scored even when the gate leaves it out, with the decision and
    its reason (explain.py), best score first."""
    similarities = [
        calibration.of(c.similarity, c.language)
        if calibration is not None and c.similarity is not None
        else None
        for c in candidates
    ]
    best_similarity = max((s for s in similarities if s is not None), default=None)
    scored = []
    about_user = calibration.about_user if calibration is not None else 0.0
    explained: dict[UUID, explain_.Considered] = {}
    for candidate, similarity in zip(candidates, similarities, strict=True):
        # The gate first: most candidates stop there, before their relevance is computed.
        gate = None
        if min_relevance is None:
            gate = scoring.gate(
                similarity=similarity if similarity_gates else None,
                best_similarity=best_similarity,
                keyword_evidence=candidate.keyword_evidence,
                about_user=about_user,
                weights=weights,
                entity_evidence=candidate.entity,
            )
            if not gate.passed and considered is None:
                continue
        relevance = scoring.relevance(
            similarity=similarity,
            keyword=candidate.keyword,
            confidence=candidate.confidence,
            vector_share=weights.vector_share,
            span=weights.similarity_span,
        )
        below_min = (
            min_relevance is not None
            and scoring.with_entity(relevance, candidate.entity, weights) < min_relevance
        )
        if below_min and considered is None:
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
        if considered is not None:
            explained[candidate.memory_id] = _considered(
                candidate, similarity, gate, score, below_min, relevance, min_relevance
            )
            if below_min or (gate is not None and not gate.passed):
                continue
        scored.append((candidate.memory_id, score, candidate.importance, candidate.updated_at))
    # Equal scores (most often memories with no evidence at all, scored 0, which a question
    # plainly about the user lets through) go by importance, then the latest update, then id
    # (UUID.int orders as its text does, without building the text): what the product marked
    # important first, and the same order on every run.
    scored.sort(key=lambda row: (-row[1].total, -row[2], -row[3].timestamp(), row[0].int))
    if considered is not None:
        for position, (memory_id, _, _, _) in enumerate(scored):
            if position < top_k:
                explained[memory_id].decision = explain_.RETURNED
            else:
                explained[memory_id].reason = explain_.BELOW_TOP_K.format(top_k=top_k)
        considered.extend(explain_.in_order(list(explained.values())))
    return [(memory_id, score) for memory_id, score, _, _ in scored[:top_k]]


def _considered(
    candidate: Candidate,
    similarity: float | None,
    gate: scoring.Gate | None,
    score: scoring.Score,
    below_min: bool,
    relevance: float,
    min_relevance: float | None,
) -> explain_.Considered:
    if below_min:
        reason = explain_.BELOW_MIN_RELEVANCE.format(
            relevance=relevance, min_relevance=min_relevance
        )
    elif gate is not None:
        reason = scoring.GATE_REASONS[gate]
    else:
        reason = "relevance reaches min_relevance"
    return explain_.Considered(
        memory_id=candidate.memory_id,
        similarity=candidate.similarity,
        calibrated_similarity=similarity,
        keyword_evidence=candidate.keyword_evidence,
        entity_evidence=candidate.entity,
        gate=gate,
        score=score,
        reason=reason,
    )
