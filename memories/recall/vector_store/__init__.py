"""One vector-store interface (base.VectorStore), two implementations: sqlite-vec and
pgvector.

Vectors are kept per *partition*: one string per owner and scope carrier (see
`partition_of`), so a nearest-neighbour query names the partitions the caller may see and
never scans another user's rows. Nothing outside this package imports sqlite_vec, pgvector
or the implementation modules; callers ask get_vector_store()."""

import functools

from django.db import connection

from memories.recall.vector_store.base import (
    Neighbour,
    VectorStore,
    partition_key,
    partition_of,
)

__all__ = ["Neighbour", "VectorStore", "get_vector_store", "partition_key", "partition_of"]


@functools.cache
def get_vector_store() -> VectorStore:
    """The store of this process's database, chosen on first use (stores keep no state)."""
    if connection.vendor == "postgresql":
        from memories.recall.vector_store.pgvector import PgVectorStore

        return PgVectorStore()
    from memories.recall.vector_store.sqlite_vec import SqliteVecStore

    return SqliteVecStore()
