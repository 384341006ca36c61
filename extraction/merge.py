"""Is a candidate new, a duplicate, or a contradiction of what the user already has?
First by normalised text and key, then by vector similarity; compared with the user's
active and pending memories in the same scope (partition)."""

import re
from dataclasses import dataclass
from typing import Literal

from memories.models import Memory


@dataclass(frozen=True)
class MergeDecision:
    kind: Literal["new", "duplicate", "conflict"]
    existing: Memory | None = None


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def classify(
    *,
    key: str,
    value: str,
    existing: list[Memory],
    similarity: dict,
    duplicate_similarity: float,
) -> MergeDecision:
    """`existing` are the memories worth comparing (same key, same text or nearest by vector);
    `similarity` maps their ids to cosine similarity with the candidate."""
    value_norm, key_norm = normalise(value), normalise(key)
    for memory in existing:
        if normalise(memory.value) == value_norm:
            return MergeDecision("duplicate", memory)
    near = [m for m in existing if similarity.get(m.id, 0.0) >= duplicate_similarity]
    if near:
        return MergeDecision("duplicate", max(near, key=lambda m: similarity[m.id]))
    same_key = [m for m in existing if normalise(m.key) == key_norm]
    if same_key:
        # Same label, different fact: propose the new one as a replacement. Prefer replacing
        # the active memory; approving the replacement archives it (never deletes).
        same_key.sort(key=lambda m: (m.status != "active", -m.created_at.timestamp()))
        return MergeDecision("conflict", same_key[0])
    return MergeDecision("new")
