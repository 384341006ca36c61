"""Long writes on SQLite in turns with everyone else's writes.

SQLite has one write lock for the whole database and no queue for it: a writer that finds it
taken sleeps and tries again after 1, 2, 5 ... up to 100 ms (the busy handler). A long write
(an import, an erasure) done as one transaction made every other user's save wait for all
of it; done as back-to-back short transactions, the next one takes the lock again before a
waiting request wakes, which then waited up to seconds all the same. So such a write holds
the lock for tens of ms at a time and, between two of its transactions, pauses for half as
long as the last one held it (at most PAUSE_MAX_SECONDS): a waiting writer wakes within that
and gets its turn. Measured with erasure (a search and a write in a loop beside it): p95
140 ms with the half pause, 220 ms with a pause as long as the batch, which doubled the
erasure's time. PostgreSQL locks rows, not the database: nothing there waits on another
user's transaction, so nothing pauses."""

import time

from django.db import connection

PAUSE_MAX_SECONDS = 0.05


def give_way(locked_seconds: float) -> None:
    """After one transaction of a long write, before its next: on SQLite, let the writers
    that waited for the lock in (see the module's docstring)."""
    if connection.vendor == "sqlite":
        time.sleep(min(locked_seconds / 2, PAUSE_MAX_SECONDS))
