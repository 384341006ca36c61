"""The tenants benchmark states the database as timed, not as its set-up left it: a
prepared database may have been loaded by older code and migrated since."""

import json

from bench.served_server import Timer


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
