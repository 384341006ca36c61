"""Hybrid recall: nearest neighbours united with keyword hits, in the caller's scopes, scored
by one function, cut to top_k; every hit counts as an access."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from memories.embedders import embed_one
from memories.models import Memory, Status
from memories.recall import scoring
from memories.recall.candidates import find_candidates
from memories.recall.scopes import RecallScope


@dataclass
class RecallHit:
    memory: Memory
    score: scoring.Score


def memory_recall(
    *,
    query: str,
    scopes: Sequence[RecallScope],
    top_k: int,
    record_access: bool = True,
    weights: scoring.Weights | None = None,
    query_vector: Sequence[float] | None = None,
) -> list[RecallHit]:
    """The top_k active memories of these scopes for `query`, best first.
    Raises EmbedderUnavailable when the configured embedder fails."""
    weights = weights or scoring.Weights.from_settings()
    vector = query_vector if query_vector is not None else embed_one(query)
    candidates = find_candidates(
        query=query,
        vector=vector,
        scopes=scopes,
        k=settings.RECALL_CANDIDATES,
        status=Status.ACTIVE,
    )

    now = timezone.now()
    scored = []
    for candidate in candidates:
        relevance = scoring.relevance(
            similarity=candidate.similarity,
            keyword=candidate.keyword,
            confidence=candidate.confidence,
            vector_share=weights.vector_share,
        )
        score = scoring.score(
            relevance_value=relevance,
            importance=candidate.importance,
            updated_at=candidate.updated_at,
            last_accessed_at=candidate.last_accessed_at,
            access_count=candidate.access_count,
            scope=candidate.scope,
            now=now,
            weights=weights,
        )
        if score is not None:
            scored.append((candidate.memory_id, score))
    # Ties go by id (UUID.int orders as its text does, without building the text).
    scored.sort(key=lambda pair: (-pair[1].total, pair[0].int))
    scored = scored[:top_k]
    if not scored:
        return []

    top_ids = [memory_id for memory_id, _ in scored]
    if record_access:
        from memories.services import memory_record_access

        memories = {memory.id: memory for memory in memory_record_access(memory_ids=top_ids)}
    else:
        memories = Memory.objects.in_bulk(top_ids)
    # A memory deleted since it was scored is left out.
    return [
        RecallHit(memory=memories[memory_id], score=score)
        for memory_id, score in scored
        if memory_id in memories
    ]
