"""The tenants benchmark states the database as timed, not as its set-up left it: a
prepared database may have been loaded by older code and migrated since."""

import json

import pytest
from django.db import connection

from bench.served_server import Timer
from tests.celery_support import worker_database_url


def test_the_timer_measures_the_database_after_its_own_migrations(tmp_path):
    database = tmp_path / "prepared.sqlite3"
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps(["where does the user live"]))
    timer = Timer(f"sqlite:///{database}", queries, module="bench.tenants")
    try:
        answer = timer.ask({"database": True})
    finally:
        timer.stop()
    assert answer["vendor"] == "sqlite"
    # Migrated by the timer itself (the file did not exist before), checkpointed, measured.
    assert answer["bytes"] == database.stat().st_size > 100_000


@pytest.mark.django_db(transaction=True)
def test_the_timer_counts_postgresql_blocks_and_says_none_on_sqlite(tmp_path):
    """The tenants benchmark reports the blocks each band's searches read from outside
    shared_buffers: pg_stat_database's counts, which only grow; SQLite has none."""
    queries = tmp_path / "queries.json"
    queries.write_text(json.dumps(["where does the user live"]))
    timer = Timer(worker_database_url(), queries, module="bench.tenants")
    try:
        first = timer.ask({"blocks": True})
        second = timer.ask({"blocks": True})
    finally:
        timer.stop()
    if connection.vendor == "sqlite":
        assert first is None and second is None
        return
    assert set(first) == {"read", "hit"}
    assert first["read"] + first["hit"] > 0  # the timer's own migrations read the catalog
    assert second["read"] >= first["read"] and second["hit"] >= first["hit"]
