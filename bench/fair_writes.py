"""`python -m bench fair_writes`: what a large import and an erasure do to other users' saves
(issue 42, item 5), on SQLite, the embedded default, where one transaction holds the
database's only write lock.

On a throwaway SQLite file (or the fresh database --database-url names), a set-up process
(`python -m bench.fair_writes setup`) migrates, makes an API key (read, write), a review key
and the importing end user, and writes an NDJSON file of --lines memories without ids (as an
export of another account). gunicorn starts with config/gunicorn.conf.py (`--workers 1`: one
process with its threads, as the embedded default serves; DEBUG off), and a separate client
process saves, one POST /api/memories at a time on a keep-alive connection, as one of
SAVERS other end users in turn, every SAVE_INTERVAL seconds. Three phases, one after the
other, while it saves:
1. quiet: --quiet-seconds of saves alone;
2. import: this process posts the file to POST /api/memories/import as the importing user;
3. erasure: DELETE /api/users/{id} of the importing user (a review key), who now holds the
   --lines memories the import wrote.
Per phase, the saves that ran while it did (started before it ended and ended after it
began): p50, p95, max, how many, how many over 1 s, non-2xx answers. Target: p95 under
TARGET_P95_MS during the import and the erasure. Writes
bench/results/fair-writes-<commit>.json (--name to change) and docs/benchmarks.md."""

import argparse
import datetime as dt
import http.client
import json
import multiprocessing
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, embedder_description, git_commit, machine, results_write
from bench.report_fair_writes import (  # noqa: F401
    SAVE_INTERVAL,
    SAVERS,
    TARGET_P95_MS,
    fair_writes_section,
    table,
)
from bench.served_server import Server

IMPORTER = "bench-importer"
SLOW_MS = 1000
WORDS = (
    "tea coffee Oslo Lisbon Berlin cello guitar hiking cycling pasta sushi museum garden "
    "novel poetry chess football Python Go Rust vegan allergy peanuts sister brother dog cat "
    "piano Spanish German French morning evening winter summer beach mountain train bicycle "
    "doctor teacher nurse engineer painter kitchen balcony library bakery market"
).split()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench fair_writes", description=__doc__)
    parser.add_argument("--lines", type=int, help="import lines, then memories erased (50000)")
    parser.add_argument("--quick", action="store_true", help="smoke size: 2000 lines")
    parser.add_argument("--quiet-seconds", type=float, help="saves alone first (20; quick 5)")
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers (1)")
    parser.add_argument(
        "--database-url", help="a fresh database instead of a throwaway SQLite file"
    )
    parser.add_argument("--name", help="results file name (default fair-writes-<commit>)")
    args = parser.parse_args(argv)
    plan = {
        "lines": args.lines or (2000 if args.quick else 50_000),
        "quiet_seconds": args.quiet_seconds or (5.0 if args.quick else 20.0),
        "workers": args.workers,
        "savers": SAVERS,
        "save_interval_s": SAVE_INTERVAL,
    }
    started = time.perf_counter()
    results = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python -m bench fair_writes " + shlex.join(argv),
            "machine": machine(),
            "git": git_commit(),
            "quick": args.quick,
            "embedder": embedder_description(),
            "plan": plan,
        },
        "fair_writes": {},
    }
    database = "postgresql" if (args.database_url or "").startswith("postgres") else "sqlite"
    print(f"== fair writes on {database}", flush=True)
    results["fair_writes"][database] = run(plan, database_url=args.database_url)
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)

    commit = results["meta"]["git"].split("+")[0]
    name = args.name or ("fair-writes-quick" if args.quick else f"fair-writes-{commit}")
    results_write(name, results)
    print("\n".join(table(results)))
    if not args.quick:
        from bench.report import write_docs

        write_docs()


def run(plan: dict, *, database_url: str | None = None) -> dict:
    """One run of the three phases; the figures of each."""
    tmp = Path(tempfile.mkdtemp(prefix="memory-fair-writes-"))
    server = saver = None
    try:
        url = database_url or f"sqlite:///{tmp / 'fair.sqlite3'}"
        setup = _setup(url, plan["lines"], tmp)
        server = Server(url, workers=plan["workers"], log=tmp / "gunicorn.log")
        key_headers = {"Authorization": f"Bearer {setup['key']}"}
        server.start({**key_headers, "X-User-Id": IMPORTER})
        stop = multiprocessing.Event()
        answers = multiprocessing.Queue()
        saver = multiprocessing.Process(
            target=_save_loop, args=(server.port, setup["key"], stop, answers), daemon=True
        )
        saver.start()
        time.sleep(1.0)  # its first saves (connection, the users' first rows) untimed
        phases: dict[str, tuple[float, float]] = {}

        began = time.monotonic()
        time.sleep(plan["quiet_seconds"])
        phases["quiet"] = (began, time.monotonic())

        began = time.monotonic()
        imported = _post_import(server.port, key_headers, tmp / "import.ndjson")
        phases["import"] = (began, time.monotonic())

        began = time.monotonic()
        erased = _delete_user(server.port, setup["review_key"], setup["importer_id"])
        phases["erasure"] = (began, time.monotonic())
        time.sleep(0.5)

        stop.set()
        saves = answers.get(timeout=120)
        saver.join(timeout=30)
        out = {
            "database": setup["database"],
            "gunicorn": {"workers": plan["workers"], "config": "config/gunicorn.conf.py"},
            "import": {**imported, "seconds": round(phases["import"][1] - phases["import"][0], 1)},
            "erasure": {
                **erased,
                "memories": plan["lines"],
                "seconds": round(phases["erasure"][1] - phases["erasure"][0], 1),
            },
        }
        out["saves"] = {name: _during(saves, *span) for name, span in phases.items()}
        return out
    finally:
        if saver is not None and saver.is_alive():
            saver.terminate()
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _setup(url: str, lines: int, tmp: Path) -> dict:
    out = tmp / "setup.json"
    command = [sys.executable, "-m", "bench.fair_writes", "setup", "--database-url", url]
    command += ["--lines", str(lines), "--out", str(out), "--ndjson", str(tmp / "import.ndjson")]
    subprocess.run(command, cwd=ROOT, check=True)
    return json.loads(out.read_text())


def setup_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fair_writes setup")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--lines", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ndjson", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    from memories.accounts.keys import api_key_create
    from memories.accounts.users import external_user_create

    importer = external_user_create(external_id=IMPORTER)
    _, key = api_key_create(name="bench fair writes", scopes=["read", "write"])
    _, review_key = api_key_create(name="bench fair writes review", scopes=["review"])
    write_lines(Path(args.ndjson), args.lines)
    Path(args.out).write_text(
        json.dumps(
            {
                "key": key,
                "review_key": review_key,
                "importer_id": str(importer.id),
                "database": dj.database_info(),
            }
        )
    )


def write_lines(path: Path, count: int) -> None:
    """`count` NDJSON memories without ids, each a fact of its own key."""
    rng = random.Random(42)
    with path.open("w") as out:
        for i in range(count):
            words = " ".join(rng.choices(WORDS, k=6))
            line = {"key": f"note {i}", "value": f"Note {i}: {words}", "category": "bench"}
            out.write(json.dumps(line) + "\n")


def _post_import(port: int, headers: dict, path: Path) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    with path.open("rb") as body:
        connection.request(
            "POST",
            "/api/memories/import",
            body=body,
            headers={
                **headers,
                "X-User-Id": IMPORTER,
                "Content-Type": "application/x-ndjson",
                "Content-Length": str(path.stat().st_size),
            },
        )
        response = connection.getresponse()
        data = response.read()
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"the import answered {response.status}: {data[:500]!r}")
    answer = json.loads(data)
    return {key: answer[key] for key in ("created", "updated", "unchanged", "superseded")}


def _delete_user(port: int, review_key: str, user_id: str) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    connection.request(
        "DELETE", f"/api/users/{user_id}", headers={"Authorization": f"Bearer {review_key}"}
    )
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.status != 204:
        raise RuntimeError(f"the erasure answered {response.status}: {data[:500]!r}")
    return {"status": response.status}


def _save_loop(port: int, key: str, stop, answers) -> None:
    """The other users' saves, one at a time, until stopped: (start, end, status) each, on
    the monotonic clock the main process marks its phases with."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    saves, i = [], 0
    while not stop.is_set():
        body = json.dumps({"key": f"drink {i}", "value": f"Had a green tea in Oslo, cup {i}"})
        headers = {
            "Authorization": f"Bearer {key}",
            "X-User-Id": f"bench-saver-{i % SAVERS}",
            "Content-Type": "application/json",
        }
        started = time.monotonic()
        try:
            connection.request("POST", "/api/memories", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            status = 599  # the connection failed: as bad as a server error
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        saves.append((started, time.monotonic(), status))
        i += 1
        time.sleep(SAVE_INTERVAL)
    answers.put(saves)


def _during(saves: list, began: float, ended: float) -> dict:
    """The saves that ran while a phase did (one it held up counts too)."""
    from bench.metrics import latency_summary

    during = [(start, end, status) for start, end, status in saves if end > began and start < ended]
    if not during:
        return {"n": 0}
    seconds = [end - start for start, end, _ in during]
    summary = latency_summary(seconds)
    summary["over_1s"] = sum(s * 1000 > SLOW_MS for s in seconds)
    summary["not_2xx"] = sum(not 200 <= status < 300 for _, _, status in during)
    return summary


if __name__ == "__main__":
    if sys.argv[1:2] == ["setup"]:
        setup_main(sys.argv[2:])
    else:
        sys.exit("usage: python -m bench.fair_writes setup ... (or python -m bench fair_writes)")
