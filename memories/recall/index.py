"""Keeps the vector store and the keyword index in step with memory writes. Services call
these inside their transaction, so a memory and its index rows commit or roll back together."""

from collections.abc import Iterable, Sequence
from uuid import UUID

from memories.embeddings.embedders import get_embedder
from memories.models import Memory
from memories.recall.keyword import get_keyword_index
from memories.recall.vector_store import get_vector_store, partition_of


def _model_name() -> str:
    """The model the vectors given here come from: the configured embedder, which made them."""
    embedder = get_embedder()
    if embedder is None:
        raise RuntimeError("vectors were given to index, but no embedder is configured")
    return embedder.model_name


def index_memory(memory: Memory, *, vector: Sequence[float] | None) -> None:
    """(Re)index a memory's text, and its vector when one is given."""
    get_keyword_index().save(memory=memory, partition=partition_of(memory))
    if vector is not None:
        get_vector_store().save(memory=memory, vector=vector, model=_model_name())


def index_new_memories(memories: Sequence[Memory], *, vectors: Sequence | None) -> None:
    """index_memory for many memories just inserted, in a few statements; `vectors` is
    None (no embedder) or one vector per memory."""
    get_keyword_index().save_new(memories=memories)
    if vectors is not None:
        get_vector_store().save_many(
            items=list(zip(memories, vectors, strict=True)), model=_model_name()
        )


def unindex_memories(memory_ids: Iterable[UUID]) -> None:
    memory_ids = list(memory_ids)
    get_keyword_index().delete(memory_ids=memory_ids)
    get_vector_store().delete(memory_ids=memory_ids)


def index_status(memory_ids: Iterable[UUID], status: str) -> None:
    memory_ids = list(memory_ids)
    get_keyword_index().set_status(memory_ids=memory_ids, status=status)
    get_vector_store().set_status(memory_ids=memory_ids, status=status)
