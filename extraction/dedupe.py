"""Is a candidate new, a duplicate, or a contradiction of what the user already has?
First by normalised text and key, then by vector similarity; compared with the user's
active and pending memories in the same scope (partition)."""

from dataclasses import dataclass
from typing import Literal

from memories.models import Memory, normalise
from memories.recall.words import STOP_WORDS


@dataclass(frozen=True)
class DedupeDecision:
    kind: Literal["new", "duplicate", "conflict"]
    existing: Memory | None = None


def content_words(text: str) -> list[str]:
    return [word for word in normalise(text).split() if word not in STOP_WORDS]


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    remaining = iter(long)
    return all(word in remaining for word in short)


def restates(a: str, b: str) -> bool:
    """One text says the other's content words in the same order ("Prefers dark mode" and
    "The user prefers dark mode"), unlike a reordering that changes the meaning
    ("prefers tea over coffee" and "prefers coffee over tea"), which embeddings cannot tell
    apart."""
    words_a, words_b = content_words(a), content_words(b)
    if len(words_a) > len(words_b):
        words_a, words_b = words_b, words_a
    return _is_subsequence(words_a, words_b)


def classify(
    *,
    key: str,
    value: str,
    existing: list[Memory],
    similarity: dict,
    duplicate_similarity: float,
) -> DedupeDecision:
    """`existing` are the memories worth comparing (same key, same text or nearest by vector);
    `similarity` maps their ids to cosine similarity with the candidate."""
    value_norm, key_norm = normalise(value), normalise(key)
    for memory in existing:
        if normalise(memory.value) == value_norm:
            return DedupeDecision("duplicate", memory)

    def near(memory: Memory) -> bool:
        return similarity.get(memory.id, 0.0) >= duplicate_similarity

    same_key = [m for m in existing if normalise(m.key) == key_norm]
    for memory in same_key:
        if near(memory) and restates(memory.value, value):
            return DedupeDecision("duplicate", memory)
    if same_key:
        # Same label, another fact: propose the new one as a replacement. Prefer replacing
        # the newest active memory; approving the replacement archives it (never deletes).
        same_key.sort(key=lambda m: (m.status != "active", -m.created_at.timestamp()))
        return DedupeDecision("conflict", same_key[0])
    others = [m for m in existing if near(m)]
    if others:
        return DedupeDecision("duplicate", max(others, key=lambda m: similarity[m.id]))
    return DedupeDecision("new")
