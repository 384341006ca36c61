"""The README's quickstart, run as a newcomer runs it (issue 24, point 8): `scripts/serve` on a
SQLite file of its own and a free port, then the walk-through's bash blocks (those between the
`<!-- quickstart` and `<!-- /quickstart -->` markers), in order, in one bash process with
`set -euo pipefail`, pointed at the server through `API`. Every curl of the walk-through uses
--fail-with-body, so a 4xx or 5xx stops the script; the assertions then read what each block
printed. No outside model: with LLM_* unset the rules extractor reads the conversation.

scripts/serve runs for real from this checkout (its install step finds .venv up to date after
./scripts/test, as tests/test_slow_clients.py relies on too). The server keeps its own database,
so the test reaches no database of the suite and runs in the SQLite pass only.

Also checked without a server: the quickstart lies within the README's first 150 lines, and
every relative link of the README and docs/ names a file that exists (and a heading in it)."""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.topology import REPO, Service, free_port, get, wait_until

README = REPO / "README.md"
BLOCKS = re.compile(r"^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)
START_MARKER = "<!-- quickstart"
END_MARKER = "<!-- /quickstart -->"
BLOCK_OUTPUT = "@@@ quickstart block "
STARTUP_SECONDS = 180
WALK_THROUGH_SECONDS = 240

# What the server and the walk-through must not inherit from the suite's environment.
SUITE_ONLY = ("DEBUG", "SECRET_KEY", "CACHE_URL", "HOST", "PORT", "DJANGO_SETTINGS_MODULE")
SUITE_ONLY_PREFIXES = ("DATABASE_", "CELERY_", "LLM_", "EMBEDDER", "PROMETHEUS_", "METRICS_")


def quickstart_blocks(text: str) -> list[str]:
    start = text.index(START_MARKER)
    end = text.index(END_MARKER, start)
    return BLOCKS.findall(text[start:end])


def test_the_quickstart_is_within_the_first_150_lines():
    lines = README.read_text().splitlines()
    end = next(number for number, line in enumerate(lines, 1) if line.strip() == END_MARKER)

    assert end <= 150, f"the walk-through ends on line {end} of README.md"
    assert "./scripts/serve" in "\n".join(lines[:20]) and "./scripts/test" in "\n".join(lines[:20])


def headings(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (outside code blocks)."""
    anchors, fence = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_links_of_the_readme_and_docs_name_files_and_headings_that_exist():
    broken = []
    for page in [README, *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not ours to check
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in headings(linked):
                broken.append(f"{page.name}: {target} (no such heading)")

    assert not broken, "\n".join(broken)


@pytest.fixture
def served(tmp_path):
    """scripts/serve as the README starts it, on a SQLite file in tmp_path and a free port,
    until /readyz answers 200. The environment the walk-through then runs in, and the log."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in SUITE_ONLY and not name.startswith(SUITE_ONLY_PREFIXES)
    }
    port = free_port()
    environment.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'memory.sqlite3'}",
        HOST="127.0.0.1",
        PORT=str(port),
        PYTHONUNBUFFERED="1",
    )
    kept_before = files_kept_for_databases()
    service = Service("serve", ["scripts/serve"], environment, tmp_path)
    try:
        wait_until(
            lambda: service_answers(port),
            what="scripts/serve to answer /healthz",
            timeout=STARTUP_SECONDS,
            alive=[service],
        )
        status = wait_for_ready(port)
        assert status == 200, (
            f"/readyz answers {status} after scripts/serve started (issue 24, point 3):\n"
            f"{service.log()[-3000:]}"
        )
        yield environment, port, service
    finally:
        service.stop()
        # This test's database is gone with tmp_path: so are the files kept for it.
        for path in files_kept_for_databases() - kept_before:
            path.unlink(missing_ok=True)


def files_kept_for_databases() -> set[Path]:
    """What serving a database leaves under the checkout's var/, one of each per database:
    the first admin's password (create_first_admin) and the embedded scheduler's lock."""
    var = REPO / "var"
    return set(var.glob("first-admin-password-*.txt")) | set(var.glob("embedded-scheduler/*.lock"))


def service_answers(port: int) -> bool:
    try:
        return get(port, "/healthz")[0] == 200
    except OSError:
        return False


def wait_for_ready(port: int, seconds: float = 30) -> int:
    """/readyz's status once it is 200, or the last one after `seconds`."""
    status = 0
    for _ in range(int(seconds / 0.5)):
        status = get(port, "/readyz")[0]
        if status == 200:
            break
        time.sleep(0.5)
    return status


def run_walk_through(blocks: list[str], environment: dict, port: int, tmp: Path) -> list[str]:
    """The blocks in one bash process; what each printed (stdout), in order."""
    missing = [tool for tool in ("bash", "curl", "jq") if shutil.which(tool) is None]
    assert not missing, f"the README's walk-through needs {', '.join(missing)}: install it"
    script = ["set -euo pipefail"]
    for number, block in enumerate(blocks):
        script += [f"echo '{BLOCK_OUTPUT}{number}'", block]
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=REPO,
        env={**environment, "API": f"http://127.0.0.1:{port}", "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        timeout=WALK_THROUGH_SECONDS,
    )
    outputs = re.split(rf"^{BLOCK_OUTPUT}\d+\n", done.stdout, flags=re.MULTILINE)[1:]
    failed_block = blocks[len(outputs) - 1] if outputs else "(before the first block)"
    assert done.returncode == 0, (
        f"the walk-through stopped (exit {done.returncode}) in block {len(outputs) - 1}:\n"
        f"{failed_block}\n--- its output:\n{outputs[-1] if outputs else ''}\n"
        f"--- stderr:\n{done.stderr[-3000:]}"
    )
    return outputs


def test_the_readme_walk_through_runs_against_scripts_serve(served, tmp_path):
    environment, port, service = served
    blocks = quickstart_blocks(README.read_text())
    assert len(blocks) == 7, "the test reads each block's output: update it with the README"

    (
        key,
        saved_and_recalled,
        tools,
        conversation,
        approved,
        mcp,
        moved,
    ) = run_walk_through(blocks, environment, port, tmp_path)

    assert key == ""  # the key goes into a variable; create_api_key's note is on stderr
    assert '{"key":"home","value":"Lives in Porto","created":true}' in saved_and_recalled
    assert '{"key":"home","value":"Lives in Porto","score":' in saved_and_recalled  # search
    assert "<user_memories>" in saved_and_recalled and "diet: Vegetarian" in saved_and_recalled
    assert tools.split("\n", 5)[:5] == [
        "memory_save",
        "memory_recall",
        "memory_context",
        "memory_profile",
        "memory_forget",
    ]
    assert '{"key":"diet","value":"Vegetarian"}' in tools

    posted, run = conversation.strip().splitlines()
    # Issue 24, point 6: a messages POST says what happened to extraction.
    assert '"status":"not_triggered"' in posted and '"reason":' in posted, posted
    assert run == '{"status":"done","created":0,"merged":1,"error":null}'

    pending, approval, hint = approved.split("\n", 2)
    assert '"key":"home","value":"Lives in Lisbon","supersedes_id":"' in pending
    assert approval == '{"key":"home","value":"Lives in Lisbon","status":"active"}'
    assert "home: Lives in Lisbon" in hint and "Porto" not in hint, hint

    server_info, tool_names = mcp.split("\n", 1)
    assert '"name":' in server_info
    assert set(tool_names.split()) == {
        "memory_save",
        "memory_recall",
        "memory_context",
        "memory_profile",
        "memory_forget",
    }

    assert '"errors":[]' in moved and '"created":0' not in moved, moved

    # The review pages the README sends the admin to: a sign-in first.
    status, _, headers = get(port, "/review/")
    assert status == 302 and "login" in headers.get("Location", ""), (status, headers)
    banner = service.log()
    assert "Staff login: username admin  password " in banner  # what the README says to use
    for path in ("/api/", "/api/docs/", "/review/", "/admin/", "/mcp"):
        assert f"http://127.0.0.1:{port}{path}" in banner, path
