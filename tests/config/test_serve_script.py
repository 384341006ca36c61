"""scripts/serve's DEBUG: the environment wins, then .env, then serve's own default (true).

The script runs for real in a copy of scripts/ whose .venv/bin/python is a stand-in that
records the DEBUG each manage.py command was started with (Django reads .env itself)."""

import hashlib
import os
import shutil
import subprocess
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
