"""Python in a process of its own, as an operator runs `manage.py`: the real settings, read
from the environment, without what the test process set for itself."""

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_python(
    arguments: list[str],
    *,
    drop: Iterable[str] = (),
    drop_prefixes: tuple[str, ...] = (),
    timeout: int = 120,
    **variables: str,
) -> subprocess.CompletedProcess:
    """`python ARGUMENTS` in the repository, its output captured: this process's environment
    without the variables named in `drop` or starting with `drop_prefixes`, plus `variables`."""
    drop = set(drop)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in drop and not key.startswith(drop_prefixes)
    }
    environment.update(variables)
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
