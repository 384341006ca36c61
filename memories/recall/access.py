"""The recall side effect: accesses counted on the memories recall returned."""

from collections.abc import Iterable
from uuid import UUID

from django.db import connection
from django.utils import timezone

from memories.models import (
    Memory,
    Scope,
)
from memories.rows import columns, reader


def memory_record_access(*, memory_ids: Iterable[UUID]) -> list[Memory]:
    """Recall side effect: one more access and a fresh time, as a single atomic UPDATE.
    Returns the memories as stored (RETURNING: no second query to read them back).

    Persona-scope memories are shared by every user of the persona: their statistics are
    left as they are, else each user would see in them what the others recall. They are
    returned as stored, unchanged."""
    memory_ids = list(memory_ids)
    ids = [Memory._meta.pk.get_db_prep_value(memory_id, connection) for memory_id in memory_ids]
    if not ids:
        return []
    quote = connection.ops.quote_name
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    # On PostgreSQL, when the UPDATE is a transaction of its own, its commit does not wait for
    # the WAL to reach the disk: a crash may lose the last fraction of a second of access
    # counts (never part of an update), and no search waits on the disk. (set_config with
    # is_local applies to the current transaction only, so none is set inside a larger one.)
    asynchronous_commit = (
        " FROM (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous_commit"
        if connection.vendor == "postgresql" and not connection.in_atomic_block
        else ""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(Memory._meta.db_table)} SET access_count = access_count + 1, "
            f"last_accessed_at = %s{asynchronous_commit} "
            f"WHERE id IN ({', '.join(['%s'] * len(ids))}) AND scope <> %s "
            f"RETURNING {columns(Memory)}",
            [now, *ids, Scope.PERSONA],
        )
        rows = cursor.fetchall()
    read = reader(Memory).read
    memories = [read(row) for row in rows]
    if len(memories) < len(ids):  # shared persona memories, or rows deleted meanwhile
        updated = {memory.id for memory in memories}
        memories += Memory.objects.filter(
            id__in=[memory_id for memory_id in memory_ids if memory_id not in updated]
        )
    return memories
