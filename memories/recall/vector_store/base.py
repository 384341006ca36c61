"""What every vector store shares: the neighbour type, the partition key and the interface."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from memories.models import CarrierIds, Memory


@dataclass(frozen=True)
class Neighbour:
    memory_id: UUID
    distance: float  # cosine distance, 0 = same direction, 2 = opposite

    @property
    def similarity(self) -> float:
        return 1.0 - self.distance


def partition_of(memory: Memory) -> str:
    """The vector partition a memory belongs to."""
    return memory.carrier_ids().partition


def partition_key(
    *, scope: str, user_id=None, persona_id=None, project_id=None, topic_id=None
) -> str:
    """The partition of a scope and its carriers (CarrierIds.partition)."""
    return CarrierIds(scope, user_id, persona_id, project_id, topic_id).partition


class VectorStore(Protocol):
    # True when nearest_sql and distance_sql give statements that can run inside a larger
    # one (the candidate step then reads neighbours and rows in one round trip).
    composes_sql: bool

    def save(self, *, memory: Memory, vector: Sequence[float], model: str) -> None:
        """Store or replace the memory's vector (call inside the writing transaction)."""

    def save_many(self, *, items: Sequence[tuple[Memory, Sequence[float]]], model: str) -> None:
        """save() for many new memories at once (none of them has a vector yet)."""

    def delete(self, *, memory_ids: Iterable[UUID]) -> None:
        """Remove the vectors and embedding rows of these memories."""

    def forget(self, *, memory_ids: Iterable[UUID], last: bool = True) -> None:
        """Erasure, after delete(): drop whatever else the store keeps that names these
        memories or their partitions (in the caller's transaction). An erasure in batches
        passes last=False for all but its final call, which may name no memory: work done
        once for all of them (every mirror's reload) waits for that one."""

    def set_status(self, *, memory_ids: Iterable[UUID], status: str) -> None:
        """Keep the status copy used to filter searches in step with the memory."""

    def nearest(
        self, *, vector: Sequence[float], partitions: Sequence[str], k: int, status: str
    ) -> list[Neighbour]:
        """The k nearest vectors within the given partitions, nearest first."""

    def nearest_few(
        self, *, vector: Sequence[float], partitions: Sequence[str], k: int, status: str
    ) -> list[Neighbour]:
        """nearest() for a caller that wants only the very closest few (a write's near
        duplicates), which a store may find with a narrower search."""

    def nearest_sql(
        self, *, vector: Sequence[float], partitions: Sequence[str], k: int, status: str
    ) -> tuple[str, list]:
        """nearest() as one SELECT of (memory_id, distance) rows (when composes_sql)."""

    def distance_sql(self, *, vector: Sequence[float], memory_id: str) -> tuple[str, list]:
        """A scalar subquery: the distance from `vector` to the memory whose id is the SQL
        expression `memory_id` (NULL without a vector; when composes_sql)."""

    def distances(
        self,
        *,
        vector: Sequence[float],
        memory_ids: Iterable[UUID],
        partitions: Sequence[str] | None = None,
    ) -> list[Neighbour]:
        """The distance from `vector` to each of these memories that has a vector.
        `partitions`, when the caller knows them, are those the memories are searched in."""

    def vectors_of(self, *, memory_ids: Iterable[UUID]) -> dict[UUID, list[float]]:
        """The stored vectors of these memories (those that have one), in one query."""

    def count(self) -> int:
        """How many vectors are stored."""

    def prepare(self, *, dimensions: int) -> None:
        """Make the store ready for vectors of this size (an index, a table), before a
        re-embedding with another model."""
