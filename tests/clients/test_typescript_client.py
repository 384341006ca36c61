"""The TypeScript client (clients/typescript): node's own tests (`npm test`) against the live
service on this pass's database, and its checked-in types against the schema as it is now."""

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import new_key

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "clients" / "typescript"
# What the build reads: when any of it is newer than the build, the build is redone.
BUILD_INPUTS = [*PACKAGE.glob("src/*"), PACKAGE / "tsconfig.json", PACKAGE / "package-lock.json"]


def run(command: list[str], *, timeout: int, **variables: str) -> subprocess.CompletedProcess:
    """A command in the package's directory, its output captured: this process's environment
    without the test settings and database, plus `variables`."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
    }
    environment.update(variables)
    return subprocess.run(
        command, cwd=PACKAGE, env=environment, capture_output=True, text=True, timeout=timeout
    )


def run_or_fail(command: list[str], *, timeout: int = 300, **variables: str) -> str:
    finished = run(command, timeout=timeout, **variables)
    if finished.returncode != 0:
        pytest.fail(
            f"`{' '.join(command)}` in {PACKAGE} exited {finished.returncode}:\n"
            f"{finished.stdout}\n{finished.stderr}",
            pytrace=False,
        )
    return finished.stdout


def is_older(path: Path, than: list[Path]) -> bool:
    return not path.exists() or path.stat().st_mtime < max(p.stat().st_mtime for p in than)


@pytest.fixture(scope="session")
def typescript_package() -> Iterator[Path]:
    """The package with its dependencies installed (npm ci) and built, when a fresh checkout or
    a change left either missing or stale; scripts/test does both before the suite starts."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail(
            "Node.js and npm are needed for the TypeScript client's tests and were not found: "
            "install them (apt-get install nodejs npm; scripts/test does).",
            pytrace=False,
        )
    # The two passes of scripts/test run at once: one installs or builds while the other waits.
    (REPO / "var").mkdir(exist_ok=True)
    with open(REPO / "var" / "typescript-client.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        installed = PACKAGE / "node_modules" / ".package-lock.json"
        if is_older(installed, [PACKAGE / "package-lock.json"]):
            run_or_fail(["npm", "ci", "--no-audit", "--no-fund", "--quiet"])
        if is_older(PACKAGE / "dist" / "index.js", BUILD_INPUTS):
            run_or_fail(["npm", "run", "build"])
    yield PACKAGE


def test_the_typescript_client_passes_its_tests_against_the_live_service(
    typescript_package, transactional_db, live_server
):
    output = run_or_fail(
        ["npm", "test"], timeout=180, MEMORY_BASE_URL=live_server.url, MEMORY_API_KEY=new_key()
    )
    # node:test's summary: the tests did run, and none was left out.
    assert "# fail 0" in output
    assert "# skipped 0" in output
    assert "# pass 0" not in output


def test_the_checked_in_types_are_those_the_current_schema_generates(typescript_package, tmp_path):
    generated = tmp_path / "schema.d.ts"
    run_or_fail(["bash", "scripts/generate.sh", str(generated)], PYTHON=sys.executable)
    checked_in = (typescript_package / "src" / "schema.d.ts").read_text()
    assert generated.read_text() == checked_in, (
        "clients/typescript/src/schema.d.ts is not what the current OpenAPI schema generates: "
        "run `npm run generate --prefix clients/typescript` and commit the file."
    )
