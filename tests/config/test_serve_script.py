"""scripts/serve's DEBUG: the environment wins, then .env, then serve's own default (true).
scripts/serve --production: the settings checked, the preparation, then gunicorn, a Celery
worker and beat with an emptied metrics directory (tests/test_topology.py runs them for real).

The script runs for real in a copy of scripts/ whose .venv/bin/python is a stand-in that
records the DEBUG each manage.py command was started with (Django reads .env itself)."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNSET = "<unset>"

STAND_IN_PYTHON = f"""#!/usr/bin/env bash
echo "$2 ${{DEBUG-{UNSET}}}" >> "$(dirname "$0")/../../calls.log"
"""


@pytest.fixture
def checkout(tmp_path) -> Path:
    (tmp_path / "scripts").mkdir()
    for name in ("serve", "_install.sh"):
        shutil.copy2(REPO / "scripts" / name, tmp_path / "scripts" / name)
    (tmp_path / "requirements.txt").write_text("Django\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STAND_IN_PYTHON)
    python.chmod(0o755)
    # What _install.sh writes after installing: nothing to install.
    digest = hashlib.sha256((tmp_path / "requirements.txt").read_bytes()).hexdigest()
    (tmp_path / ".venv" / ".installed-requirements.txt").write_text(digest + "\n")
    return tmp_path


def serve(checkout: Path, dotenv: str | None = None, **variables: str) -> dict[str, str]:
    """Run scripts/serve; the DEBUG each manage.py command saw, by command."""
    if dotenv is not None:
        (checkout / ".env").write_text(dotenv)
    environment = {key: value for key, value in os.environ.items() if key != "DEBUG"}
    environment.update(variables)
    done = subprocess.run(
        [str(checkout / "scripts" / "serve")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    calls = (checkout / "calls.log").read_text().splitlines()
    return dict(line.split(" ", 1) for line in calls)


def test_without_debug_anywhere_serve_turns_it_on(checkout):
    seen = serve(checkout)

    assert seen == {"migrate": "true", "create_first_admin": "true", "runserver": "true"}


def test_debug_false_in_dotenv_is_left_for_django_to_read(checkout):
    seen = serve(checkout, dotenv="SECRET_KEY=abc\nDEBUG=false\n")

    assert set(seen.values()) == {UNSET}


def test_debug_in_an_exported_dotenv_line_counts_too(checkout):
    seen = serve(checkout, dotenv="export DEBUG=off\n")

    assert set(seen.values()) == {UNSET}


def test_an_empty_or_commented_debug_in_dotenv_does_not_count(checkout):
    seen = serve(checkout, dotenv="DEBUG=\n# DEBUG=false\n  DEBUG=false\n")

    assert set(seen.values()) == {"true"}


def test_debug_from_the_environment_wins_over_dotenv(checkout):
    seen = serve(checkout, dotenv="DEBUG=true\n", DEBUG="false")

    assert set(seen.values()) == {"false"}


# --- --production --------------------------------------------------------------------------------

# The settings check (manage.py shell) runs for real, on this repository's settings; every
# other command is recorded with the variables the processes would see.
PRODUCTION_STAND_IN = f"""#!/usr/bin/env bash
if [ "$1 $2" = "manage.py shell" ]; then cd {REPO} && exec {sys.executable} "$@"; fi
seen="${{DEBUG-{UNSET}}} ${{PROMETHEUS_MULTIPROC_DIR-{UNSET}}}"
echo "$* | $seen" >> "$(dirname "$0")/../../calls.log"
# gunicorn and Celery run on until the first of them stops, which stops the others.
if [ "$1" = -m ]; then sleep 1; fi
"""
PRODUCTION = {
    "DATABASE_URL": "postgres://memory:secret@127.0.0.1:1/memory",  # never connected to
    "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
    "SECRET_KEY": "test-only-secret-key",
}


def serve_production(checkout: Path, **variables: str) -> subprocess.CompletedProcess:
    (checkout / ".venv" / "bin" / "python").write_text(PRODUCTION_STAND_IN)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DEBUG", "DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR")
        and not key.startswith(("DATABASE_", "CELERY_"))
    }
    environment.update(variables)
    return subprocess.run(
        [str(checkout / "scripts" / "serve"), "--production"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def calls_of(checkout: Path) -> list[str]:
    log = checkout / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_production_prepares_then_runs_gunicorn_a_worker_and_beat_with_emptied_metrics(checkout):
    stale = checkout / "var" / "metrics" / "counter_123.db"
    stale.parent.mkdir(parents=True)
    stale.write_text("figures of a process that ran before")

    done = serve_production(checkout, **PRODUCTION)

    assert done.returncode == 0, done.stderr
    metrics = checkout / "var" / "metrics"
    seen = f" | {UNSET} {metrics}"
    calls = calls_of(checkout)
    assert calls[:3] == [
        f"manage.py migrate --noinput{seen}",
        f"manage.py collectstatic --noinput{seen}",
        f"manage.py export_embedder{seen}",
    ]
    assert sorted(calls[3:]) == [
        f"-m celery -A config beat{seen}",
        f"-m celery -A config worker --concurrency 2{seen}",
        f"-m gunicorn -c config/gunicorn.conf.py --bind 127.0.0.1:8000 --workers 2{seen}",
    ]
    assert metrics.is_dir() and list(metrics.iterdir()) == []


def test_production_keeps_the_metrics_directory_and_sizes_the_settings_give(checkout, tmp_path):
    metrics = tmp_path / "shared-metrics"

    done = serve_production(
        checkout,
        **PRODUCTION,
        PROMETHEUS_MULTIPROC_DIR=str(metrics),
        WEB_CONCURRENCY="4",
        WORKER_CONCURRENCY="3",
        PORT="9000",
    )

    assert done.returncode == 0, done.stderr
    calls = calls_of(checkout)
    assert f"-m celery -A config worker --concurrency 3 | {UNSET} {metrics}" in calls
    assert (
        f"-m gunicorn -c config/gunicorn.conf.py --bind 127.0.0.1:9000 --workers 4 | {UNSET} "
        f"{metrics}" in calls
    )


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"DATABASE_URL": "sqlite:////tmp/memory.sqlite3"},
            "--production runs on PostgreSQL: set DATABASE_URL=postgres://...",
        ),
        (
            {"CELERY_BROKER_URL": ""},
            "--production runs Celery on Redis: set CELERY_BROKER_URL=redis://...",
        ),
    ],
)
def test_production_without_postgresql_or_a_broker_stops_before_anything_runs(
    checkout, variables, message
):
    done = serve_production(checkout, **(PRODUCTION | variables))

    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == message
    assert calls_of(checkout) == []
