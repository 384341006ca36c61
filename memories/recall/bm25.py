"""BM25 over the memories one caller may read, and nothing else.

Every statistic here (how many memories, their mean length, how many hold each word) comes
from the caller's own partitions, so a user's scores cannot move when another user writes:
shared statistics would let anyone learn which words other users' memories contain.

    idf(t)      = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))          (never negative)
    score(d)    = Σ idf(t) · f(t,d)·(k1 + 1) / (f(t,d) + k1·(1 − b + b·|d| / avg|d|))
    evidence(d) = Σ idf(t) over the query terms d holds / Σ idf(t) over all query terms

`evidence` is on its own scale, 0..1 whatever the collection: the share of the query's word
weight a memory matched. It decides whether keyword matches alone make a memory relevant.
"""

import heapq
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from uuid import UUID

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Collection:
    memories: int  # N
    words: int  # indexed words of all N memories
    term_memories: Mapping[str, int]  # n(t) for the query's terms (absent: 0)

    @property
    def mean_length(self) -> float:
        return self.words / self.memories if self.memories else 0.0

    def idf(self, term: str) -> float:
        n = self.term_memories.get(term, 0)
        return math.log(1.0 + (self.memories - n + 0.5) / (n + 0.5))


# Whatever identifies a memory in the postings: the service's UUIDs, a benchmark's own ids.
MemoryId = TypeVar("MemoryId", bound=Hashable)


@dataclass(frozen=True)
class KeywordHit(Generic[MemoryId]):
    memory_id: MemoryId
    score: float  # BM25, > 0
    evidence: float  # 0..1, see the module docstring


def terms_within_budget(terms: Sequence[str], collection: Collection, budget: int) -> list[str]:
    """The query terms whose memories are looked up: the rarest ones whose memory counts add
    up to at most `budget` (each looked-up memory costs time). The others are common enough
    that they say little about which memory is meant; found memories still score by them."""
    if collection.memories <= budget:
        return [t for t in terms if collection.term_memories.get(t, 0)]
    kept, total = set(), 0
    for term in sorted(terms, key=lambda t: (collection.term_memories.get(t, 0), t)):
        n = collection.term_memories.get(term, 0)
        if not n:
            continue
        if total + n > budget:
            break
        kept.add(term)
        total += n
    return [t for t in terms if t in kept]


def most_a_memory_gains(terms: Sequence[str], collection: Collection) -> float:
    """An upper bound of what these terms can add to any memory's score (each term's part
    tends to idf·(k1 + 1) as its occurrences grow)."""
    return sum(collection.idf(term) * (K1 + 1.0) for term in terms)


def scores(
    *,
    terms: Sequence[str],
    postings: Mapping[Hashable, Mapping[str, tuple[int, int]]],
    collection: Collection,
) -> dict[Hashable, tuple[float, float]]:
    """{memory: (score, evidence)} of the memories in `postings`, which maps each to {term:
    (occurrences, memory length)} for the query terms it holds."""
    idf = {term: collection.idf(term) for term in terms}
    total_idf = sum(idf.values()) or 1.0
    mean_length = collection.mean_length or 1.0
    result = {}
    for memory_id, held in postings.items():
        score = matched_idf = 0.0
        for term, (occurrences, length) in held.items():
            if term not in idf:
                continue
            norm = K1 * (1.0 - B + B * length / mean_length)
            score += idf[term] * occurrences * (K1 + 1.0) / (occurrences + norm)
            matched_idf += idf[term]
        if score > 0:
            result[memory_id] = (score, matched_idf / total_idf)
    return result


def rank(
    *,
    terms: Sequence[str],
    postings: Mapping[Hashable, Mapping[str, tuple[int, int]]],
    collection: Collection,
    k: int,
) -> list[KeywordHit[Hashable]]:
    """The k best of the found memories, best first (ties by id)."""
    found = scores(terms=terms, postings=postings, collection=collection)
    best = heapq.nsmallest(k, found.items(), key=lambda item: (-item[1][0], tie_key(item[0])))
    return [KeywordHit(memory_id, score, evidence) for memory_id, (score, evidence) in best]


def tie_key(memory_id: Hashable) -> Any:
    """What orders memories of equal score: the id, as its integer when it is a UUID (the
    same order). Memories often tie (the same words in texts of the same length), and a UUID
    compares in Python code: a medium user's keyword search spent a third of its time there."""
    return memory_id.int if isinstance(memory_id, UUID) else memory_id
