"""Point lookups on SQLite virtual tables (vec0), shared by the vector store and its mirror."""

from django.db import connection


def point_lookups(select: str, params: list[tuple], *, cursor=None) -> list[tuple]:
    """Run `select` once per parameter tuple as one statement (UNION ALL). vec0 answers
    `memory_id = ?` from its primary-key index but `memory_id IN (...)` with a full scan."""
    if cursor is None:
        with connection.cursor() as cursor:
            return point_lookups(select, params, cursor=cursor)
    rows: list[tuple] = []
    chunk = 200  # below SQLite's limit of 500 terms in a compound SELECT
    for start in range(0, len(params), chunk):
        part = params[start : start + chunk]
        cursor.execute(
            " UNION ALL ".join([select] * len(part)), [value for p in part for value in p]
        )
        rows.extend(cursor.fetchall())
    return rows
