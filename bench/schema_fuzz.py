"""`python -m bench.schema_fuzz [--examples 50] [--db sqlite,postgresql]`: the schema
conformance run of tests/test_schema_conformance.py with more examples per operation, against
a real threaded WSGI server, as a normal user and as staff, on each database (a throwaway
SQLite file; a fresh database on the benchmark's pgserver PostgreSQL). Writes
bench/results/schema-fuzz.json and exits 1 if any check failed."""

import argparse
import datetime as dt
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import DATABASES, ROOT, git_commit, machine, results_write


def worker(argv: list[str]) -> None:
    """One database, in its own process: migrate, start the server, fuzz, write the JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.schema_fuzz worker")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--examples", type=int, required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application
    from rest_framework.authtoken.models import Token

    from memories.models import User
    from tests.schema_fuzz import FuzzReport, fuzz

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args):  # thousands of requests: no access log
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    result = {"database": dj.database_info(), "examples": args.examples, "callers": {}}
    try:
        for kind in ("user", "staff"):
            # Random username: POST /api/me/erase wants it as confirmation (see the test).
            user = User.objects.create_user(
                username=f"fuzz-{kind}-{time.time_ns()}", is_staff=kind == "staff"
            )
            token, _ = Token.objects.get_or_create(user=user)
            started = time.perf_counter()
            report = fuzz(
                base_url=base_url,
                authorization=f"Token {token.key}",
                max_examples=args.examples,
                report=FuzzReport(),
            )
            result["callers"][kind] = {
                **report.as_dict(),
                "seconds": round(time.perf_counter() - started, 1),
            }
    finally:
        server.shutdown()
    with open(args.out, "w") as out:
        json.dump(result, out, indent=2, default=str)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        worker(argv[1:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.schema_fuzz", description=__doc__)
    parser.add_argument("--examples", type=int, default=50, help="per operation and mode")
    parser.add_argument("--db", default=",".join(DATABASES), help="sqlite,postgresql")
    parser.add_argument("--name", default="schema-fuzz", help="results file name")
    args = parser.parse_args(argv)
    databases = [d.strip() for d in args.db.split(",") if d.strip()]

    results: dict = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python -m bench.schema_fuzz " + shlex.join(argv),
            "machine": machine(),
            "git": git_commit(),
        }
    }
    pg = None
    if "postgresql" in databases:
        from bench.pg import BenchPostgres

        pg = BenchPostgres()
    try:
        for database in databases:
            tmp = Path(tempfile.mkdtemp(prefix="memory-fuzz-"))
            db_name = None
            try:
                if database == "sqlite":
                    url = f"sqlite:///{tmp / 'fuzz.sqlite3'}"
                else:
                    db_name, url = pg.create_database("fuzz")
                out = tmp / "result.json"
                print(f"== schema fuzz on {database}", flush=True)
                command = [sys.executable, "-m", "bench.schema_fuzz", "worker"]
                command += ["--database-url", url, "--out", str(out)]
                command += ["--examples", str(args.examples)]
                started = time.perf_counter()
                subprocess.run(command, cwd=ROOT, check=True)
                results[database] = json.loads(out.read_text())
                results[database]["wall_seconds"] = round(time.perf_counter() - started, 1)
            finally:
                if db_name:
                    pg.drop_database(db_name)
                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if pg is not None:
            pg.stop()

    results_write(args.name, results)
    failed = False
    for database in databases:
        for kind, figures in results[database]["callers"].items():
            failures = figures["failures"]
            failed = failed or bool(failures)
            print(
                f"{database} {kind}: {figures['requests']} requests, {len(failures)} failures, "
                f"statuses {figures['statuses']}, {figures['seconds']} s"
            )
            for failure in failures:
                print("  " + failure)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
