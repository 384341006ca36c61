"""Checks for erasure: which tables still hold a trace of a user."""

from django.db import connection

from memories.models import Memory, User


def table_names() -> list[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        return [row[0] for row in cursor.fetchall()]


def rows_mentioning(needles: set[str]) -> list[tuple[str, tuple]]:
    """Every row of every table with a cell that contains one of the needles."""
    found = []
    quote = connection.ops.quote_name
    for table in table_names():
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {quote(table)}")
            for row in cursor.fetchall():
                for cell in row:
                    text = (
                        bytes(cell).decode("latin-1")
                        if isinstance(cell, bytes | memoryview)
                        else str(cell)
                    )
                    if any(needle in text for needle in needles):
                        found.append((table, row))
                        break
    return found


def tables_mentioning(needles: set[str]) -> set[str]:
    return {table for table, _ in rows_mentioning(needles)}


def traces_of(user: User, marker: str) -> set[str]:
    """Strings that only rows about this user contain: its ids (in both spellings the
    databases store), names and a marker its texts carry."""
    ids = [user.id, *Memory.objects.filter(user=user).values_list("id", flat=True)]
    ids += list(user.topic_set.values_list("id", flat=True))
    ids += list(user.project_set.values_list("id", flat=True))
    ids += list(user.worksession_set.values_list("id", flat=True))
    needles = {marker, user.username}
    if user.external_id:
        needles.add(user.external_id)
    for value in ids:
        needles |= {str(value), value.hex}
    return needles
