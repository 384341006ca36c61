"""The recall side effect: accesses counted on the memories recall returned."""

from collections.abc import Iterable
from typing import cast
from uuid import UUID

from django.db import connection
from django.utils import timezone

from memories.models import (
    Memory,
    Scope,
)


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
    # A concrete field is one with a column (Field.concrete is `column is not None`), which
    # the stubs cannot tell from the field's type.
    columns = ", ".join(quote(cast(str, field.column)) for field in Memory._meta.concrete_fields)
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
            f"RETURNING {columns}",
            [now, *ids, Scope.PERSONA],
        )
        rows = cursor.fetchall()
    memories = _memories_from_rows(rows)
    if len(memories) < len(ids):  # shared persona memories, or rows deleted meanwhile
        updated = {memory.id for memory in memories}
        memories += Memory.objects.filter(
            id__in=[memory_id for memory_id in memory_ids if memory_id not in updated]
        )
    return memories


def _memories_from_rows(rows) -> list[Memory]:
    """Memory instances from rows of all concrete columns in field order, converted as the
    ORM converts what it reads (a raw() queryset does the same with more set-up per call)."""
    fields = Memory._meta.concrete_fields
    converters = []
    for i, field in enumerate(fields):
        column = field.get_col(Memory._meta.db_table)
        functions = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if functions:
            converters.append((i, column, functions))
    names = [field.attname for field in fields]
    memories = []
    for row in rows:
        values = list(row)
        for i, column, functions in converters:
            for convert in functions:
                values[i] = convert(values[i], column, connection)
        memories.append(Memory.from_db(connection.alias, names, values))
    return memories
