"""Keys that replace: a proposal that gives one of the user's current facts a new value
under a key of the model's own ("location" for "home", "occupation" for "job") takes the
current memory's key, so the dedupe step proposes it as that memory's replacement instead of
a second, contradicting fact.

A proposal takes a current key when the model names it in `replaces`, or when the two
memories' texts ("key: value") are at least TEXT_SIMILARITY alike and their keys at least
RELATED_KEY_SIMILARITY (the nearest such memory), unless the proposal's key names another
time or someone else's ("previous employer", "sister's pet"). The default embedder's
figures, measured on tests/data/drifted_keys.json (docs/extraction.md, tests/extraction/
test_keys.py): 22 of 24 drifted keys found, 2 of 12 other facts near a current one taken for
it, each a proposal a reviewer approves or not.
Without an embedder only `replaces` and the same key count."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memories.embeddings.embedders import get_embedder
from memories.models import Memory, normalise

if TYPE_CHECKING:
    from extraction.parsing import Candidate

RELATED_KEY_SIMILARITY = 0.86
TEXT_SIMILARITY = 0.88
# A key that names another time or someone else's ("previous employer", "sister's pet",
# "partner's job") is another fact than the key without those words, however close.
_OTHER_SLOT = re.compile(
    r"\b(?:previous|former|old|ex|past|next|future|second|other|first)\b|'s\b|s'(?:\s|$)"
)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def with_current_keys(
    candidates: Sequence[Candidate],
    vectors: Sequence[list[float] | None],
    current: Sequence[Memory],
) -> list[Candidate]:
    """The candidates, each with the key of the current memory it gives a new value for
    (see the module docstring), else as proposed."""
    by_key = {normalise(memory.key): memory for memory in current}

    def named(candidate: Candidate) -> Memory | None:
        return by_key.get(normalise(candidate.replaces)) if candidate.replaces else None

    drifted = [
        i
        for i, candidate in enumerate(candidates)
        if normalise(candidate.key) not in by_key and named(candidate) is None
    ]
    meant = _by_meaning([candidates[i] for i in drifted], [vectors[i] for i in drifted], current)
    taken = {i: meant[n] for n, i in enumerate(drifted) if n in meant}
    out = []
    for i, candidate in enumerate(candidates):
        # The same key is the dedupe step's to replace; else the key named, else the meant.
        memory = None if normalise(candidate.key) in by_key else named(candidate) or taken.get(i)
        out.append(dataclasses.replace(candidate, key=memory.key) if memory else candidate)
    return out


def _by_meaning(
    candidates: Sequence[Candidate],
    vectors: Sequence[list[float] | None],
    current: Sequence[Memory],
) -> dict[int, Memory]:
    """{index in candidates: the current memory its key means} for those that mean one."""
    embedder = get_embedder()
    if embedder is None or not candidates or not current:
        return {}
    keys = embedder.embed(
        [c.key for c in candidates]
        + [m.key for m in current]
        + [f"{m.key}: {m.value}" for m in current]
    )
    candidate_keys = keys[: len(candidates)]
    current_keys = keys[len(candidates) : len(candidates) + len(current)]
    current_texts = keys[len(candidates) + len(current) :]
    found = {}
    for i, (candidate_key, vector) in enumerate(zip(candidate_keys, vectors, strict=True)):
        best, best_score = None, 0.0
        if _OTHER_SLOT.search(candidates[i].key.casefold().replace("’", "'")):
            continue
        for memory, key_vector, text_vector in zip(
            current, current_keys, current_texts, strict=True
        ):
            key_similarity = cosine(candidate_key, key_vector)
            text_similarity = cosine(vector, text_vector) if vector is not None else 0.0
            if (
                key_similarity >= RELATED_KEY_SIMILARITY
                and text_similarity >= TEXT_SIMILARITY
                and text_similarity > best_score
            ):
                best, best_score = memory, text_similarity
        if best is not None:
            found[i] = best
    return found
