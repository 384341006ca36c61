"""The test command's second pass (PostgreSQL) leaves out the tests that would only repeat
the first: those that reach no database, and the bounded schema conformance run."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def collected(database_url: str, *args: str) -> list[str]:
    """The test ids a whole-suite run collects with this DATABASE_URL (nothing connects to it
    while collecting)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *args],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_postgresql_pass_leaves_out_tests_without_a_database_and_keeps_the_rest():
    on_sqlite = collected("sqlite:////tmp/never-opened.sqlite3")
    on_postgresql = collected("postgres://nobody@127.0.0.1:1/never_opened")

    without_database = "tests/extraction/test_parsing.py::"
    with_database = "tests/memories/test_api_create.py::"
    needing_postgresql = "tests/test_topology.py::"
    conformance = "tests/test_schema_conformance.py::"
    for prefix in (without_database, conformance):
        assert any(test.startswith(prefix) for test in on_sqlite)
        assert not any(test.startswith(prefix) for test in on_postgresql)
    for prefix in (with_database, needing_postgresql):
        assert [t for t in on_sqlite if t.startswith(prefix)] == [
            t for t in on_postgresql if t.startswith(prefix)
        ]
        assert any(test.startswith(prefix) for test in on_postgresql)


def test_a_run_that_names_its_tests_gets_them_on_postgresql_too():
    named = "tests/extraction/test_parsing.py"

    assert collected("postgres://nobody@127.0.0.1:1/never_opened", named) == collected(
        "sqlite:////tmp/never-opened.sqlite3", named
    )
