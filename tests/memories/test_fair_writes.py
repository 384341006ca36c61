"""A large import and an erasure take turns with other users' writes (issue 42, item 5).

On SQLite one transaction holds the database's only write lock: an import wrote 500 lines
per transaction (~1.5-3 s here) and erasure's last step rewrote the whole full-text index
in the transaction that deleted the user row. Here each transaction of an import or an
erasure is recorded (its statements, from the connection's execute wrapper, split at each
commit) and, right after each commit, another user's write runs on another connection that
does not wait for the lock at all (SQLite busy timeout 0): it must get in every time. On
PostgreSQL, which locks rows, the import keeps its chunks of 500 and nothing pauses.
Timings are the benchmark's (`python -m bench fair_writes`), not these tests'."""

import threading
from unittest import mock

import pytest
from django.db import connection

from memories import erasure, write_turns
from memories.models import Memory, Message, Topic
from memories.portability import importing
from memories.recall.keyword import FTS_TABLE
from tests.conftest import end_user, make_user

MEMORY_INSERT = f'INSERT INTO "{Memory._meta.db_table}"'
USER_DELETE = 'DELETE FROM "memories_user"'


def write_as_another_user(user) -> None:
    """A save of another user on a connection of its own that gives up at once if the
    write lock is taken (SQLite): it raises "database is locked" instead of waiting."""
    errors: list[Exception] = []

    def write():
        try:
            if connection.vendor == "sqlite":
                connection.ensure_connection()
                connection.connection.execute("PRAGMA busy_timeout = 0")
            Memory.objects.create(user=user, key="tea", value="Drinks green tea")
        except Exception as exc:  # reported below; a thread cannot fail the test itself
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(timeout=30)
    assert not errors, errors


class Transactions:
    """Within it: the statements of each transaction of this thread's connection, another
    user's write right after each commit, and the pauses write_turns takes (not slept)."""

    def __init__(self, *, other) -> None:
        self.done: list[list[str]] = []
        self.current: list[str] = []
        self.other = other
        self.other_writes = 0
        self.pauses: list[float] = []

    def __enter__(self):
        real_commit = connection.commit

        def commit():
            real_commit()
            self.done.append(self.current)
            self.current = []
            write_as_another_user(self.other)
            self.other_writes += 1

        # Put back on the way out, before the test database is flushed (monkeypatch would
        # undo it only after that).
        self.patches = [
            mock.patch.object(connection, "commit", commit),
            mock.patch.object(write_turns.time, "sleep", self.pauses.append),
            connection.execute_wrapper(self._record),
        ]
        for patch in self.patches:
            patch.__enter__()
        return self

    def __exit__(self, *exc):
        for patch in reversed(self.patches):
            patch.__exit__(*exc)

    def _record(self, execute, sql, params, many, context):
        if connection.in_atomic_block:
            self.current.append(sql)
        return execute(sql, params, many, context)

    def memory_inserts(self) -> list[int]:
        """Memories inserted by each transaction that inserted any."""
        counts = [sum(sql.startswith(MEMORY_INSERT) for sql in t) for t in self.done]
        return [count for count in counts if count]


@pytest.fixture
def importer(transactional_db):
    return end_user(make_user("importer"))


@pytest.fixture
def other(transactional_db):
    return make_user("other")


def lines(count: int) -> list[importing.ImportLine]:
    return [
        importing.ImportLine(number=i + 1, key=f"fact {i}", value=f"Value number {i} wombat")
        for i in range(count)
    ]


def test_a_large_import_writes_short_transactions_and_lets_another_write_in_between(
    importer, other, no_embedder
):
    with Transactions(other=other) as transactions:
        result = importing.memory_import(actor=importer, lines=lines(120))

    assert result.created == 120 and result.errors == []
    assert Memory.objects.filter(user=importer).count() == 120
    inserts = transactions.memory_inserts()
    assert sum(inserts) == 120
    assert transactions.other_writes == len(transactions.done)
    assert Memory.objects.filter(user=other).count() == transactions.other_writes
    if connection.vendor == "sqlite":
        assert inserts == [50, 50, 20]
        # After each chunk it gives way: half the time the chunk held the lock, at most 50 ms.
        assert len(transactions.pauses) == 3
        assert all(0 < pause <= write_turns.PAUSE_MAX_SECONDS for pause in transactions.pauses)
    else:
        assert inserts == [120]  # PostgreSQL: chunks of IMPORT_CHUNK_LINES, as before
        assert transactions.pauses == []


def test_importing_a_file_again_takes_no_write_transaction(importer, other, no_embedder):
    importing.memory_import(actor=importer, lines=lines(60))
    with Transactions(other=other) as transactions:
        result = importing.memory_import(actor=importer, lines=lines(60))

    assert result.unchanged == 60 and result.created == 0
    assert transactions.done == [] and transactions.pauses == []


def test_an_erasure_ends_with_a_short_transaction_and_lets_another_write_in_between(
    importer, other, monkeypatch, no_embedder
):
    importing.memory_import(actor=importer, lines=lines(250))
    topic = Topic.objects.create(user=importer, title="long chat")
    Message.objects.bulk_create(
        Message(topic=topic, role="user", content=f"message {i} wombat") for i in range(30)
    )
    monkeypatch.setattr(erasure, "ERASE_BATCH", {"sqlite": 100, "postgresql": 100})
    monkeypatch.setattr(erasure, "ERASE_MESSAGE_BATCH", {"sqlite": 20, "postgresql": 20})
    with Transactions(other=other) as transactions:
        erasure.user_erase(user=importer)

    assert not Memory.objects.filter(user_id=importer.id).exists()
    assert not Message.objects.filter(topic_id=topic.id).exists()
    assert transactions.other_writes == len(transactions.done)
    last = transactions.done[-1]
    assert any(sql.startswith(USER_DELETE) for sql in last)
    # The last transaction does not rewrite the full-text index, and the messages went
    # before it: both a batch or a merge step at a time.
    assert not any(FTS_TABLE in sql and ("optimize" in sql or "merge" in sql) for sql in last)
    message_deletes = [
        t
        for t in transactions.done[:-1]
        if any(f'DELETE FROM "{Message._meta.db_table}"' in s for s in t)
    ]
    assert len(message_deletes) == 2  # 30 messages, 20 a transaction
    if connection.vendor == "sqlite":
        merges = [t for t in transactions.done if any("'merge'" in sql for sql in t)]
        assert merges and all(len(t) <= 2 for t in merges)  # BEGIN and one merge step
        # It gave way after every transaction but the last.
        assert len(transactions.pauses) == len(transactions.done) - 2  # hide, last
    else:
        assert transactions.pauses == []
