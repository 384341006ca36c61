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


# Words that name the person the memories are about: "The user prefers dark mode" says no
# more than "Prefers dark mode".
_PERSON_WORDS = frozenset({"user", "users"})


def content_words(text: str) -> list[str]:
    return [
        word
        for word in normalise(text).split()
        if word not in STOP_WORDS and word not in _PERSON_WORDS
    ]


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    remaining = iter(long)
    return all(word in remaining for word in short)


def adds_nothing(new: str, existing: str) -> bool:
    """The new text says nothing the existing one does not: its content words are the
    existing one's, in the same order ("The user prefers dark mode" after "Prefers dark
    mode", or the reverse). A reordering that changes the meaning ("prefers coffee over tea"
    after "prefers tea over coffee"), which embeddings cannot tell apart, is not; nor is a
    text that adds to it ("Allergic to peanuts and shellfish" after "Allergic to peanuts"):
    that is a new value for the fact."""
    return _is_subsequence(content_words(new), content_words(existing))


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
        if near(memory) and adds_nothing(value, memory.value):
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
