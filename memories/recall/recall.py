"""Hybrid recall: nearest neighbours united with keyword hits, in the caller's scopes, scored
by one function, cut to top_k; every hit counts as an access."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from memories.embedders import embed_one
from memories.models import Memory, Status
from memories.recall import scoring
from memories.recall.keyword import get_keyword_index
from memories.recall.scopes import RecallScope
from memories.recall.vector_store import get_vector_store


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
    partitions = [scope.partition for scope in scopes]
    candidates = settings.RECALL_CANDIDATES
    vector = query_vector if query_vector is not None else embed_one(query)

    similarity: dict = {}
    if vector is not None:
        store = get_vector_store()
        for hit in store.nearest(
            vector=vector, partitions=partitions, k=candidates, status=Status.ACTIVE
        ):
            similarity[hit.memory_id] = hit.similarity
    keyword_hits = get_keyword_index().search(
        text=query,
        partitions=partitions,
        scopes=[scope.condition for scope in scopes],
        k=candidates,
        status=Status.ACTIVE,
    )
    best_keyword = max((s for _, s in keyword_hits), default=0.0)
    keyword = {memory_id: s / best_keyword for memory_id, s in keyword_hits}

    if vector is not None:
        missing = [memory_id for memory_id in keyword if memory_id not in similarity]
        for hit in get_vector_store().distances(vector=vector, memory_ids=missing):
            similarity[hit.memory_id] = hit.similarity

    ids = set(similarity) | set(keyword)
    if not ids:
        return []
    in_scope = Q()
    for scope in scopes:
        in_scope |= scope.condition
    memories = Memory.objects.filter(
        in_scope, id__in=ids, status=Status.ACTIVE, deleted_at__isnull=True
    )

    now = timezone.now()
    hits = []
    for memory in memories:
        relevance = scoring.relevance(
            similarity=similarity.get(memory.id, 0.0) if vector is not None else None,
            keyword=keyword.get(memory.id, 0.0),
            confidence=memory.confidence,
            vector_share=weights.vector_share,
        )
        score = scoring.score(
            relevance_value=relevance,
            importance=memory.importance,
            updated_at=memory.updated_at,
            last_accessed_at=memory.last_accessed_at,
            access_count=memory.access_count,
            scope=memory.scope,
            now=now,
            weights=weights,
        )
        if score is not None:
            hits.append(RecallHit(memory=memory, score=score))
    hits.sort(key=lambda hit: (-hit.score.total, str(hit.memory.id)))
    hits = hits[:top_k]

    if record_access and hits:
        from memories.services import memory_record_access

        memory_record_access(memory_ids=[hit.memory.id for hit in hits])
        for hit in hits:
            hit.memory.access_count += 1
            hit.memory.last_accessed_at = now
    return hits
