"""`python -m bench run|quality|latency|sweep|vague|tune|graphs|report` (and `served`,
`fair_writes`, `embedders`, `calibrate`, with options of their own): runs each part on each
database in a worker process of its own (throwaway SQLite file; fresh database on a pgserver
PostgreSQL), collects the JSON, writes bench/results/<name>.json and docs/benchmarks.md (not
for vague, which prints its table instead). graphs runs on PostgreSQL alone (bench/graphs.py)."""

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import report, vague
from bench.common import (
    DATABASES,
    ROOT,
    embedder_description,
    git_commit,
    machine,
    results_write,
    synthetic_noise_calibration,
)
from bench.report import write_docs


def _wait_idle(max_seconds: float, threshold: float = 1.0) -> float:
    """Wait (up to max_seconds) until the 1-minute load average falls below threshold, so
    other work on the machine distorts the timings less. Returns the seconds waited."""
    started = time.perf_counter()
    while time.perf_counter() - started < max_seconds and os.getloadavg()[0] >= threshold:
        time.sleep(10)
    return round(time.perf_counter() - started, 1)


def _worker(task: str, database: str, extra: list[str], pg, wait_idle: float = 0) -> dict:
    """Run one part on a fresh database of the given kind; returns its JSON."""
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    out = tmp / "result.json"
    db_name = None
    try:
        if database == "sqlite":
            url = f"sqlite:///{tmp / 'bench.sqlite3'}"
        else:
            db_name, url = pg.create_database(task)
        command = [sys.executable, "-m", "bench.worker", task, "--database-url", url]
        command += ["--out", str(out), *extra]
        print(f"== {task} on {database}", flush=True)
        waited = _wait_idle(wait_idle) if wait_idle else 0.0
        load_before = os.getloadavg()
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True)
        result = json.loads(out.read_text())
        result["wall_seconds"] = round(time.perf_counter() - started, 1)
        result["waited_for_idle_seconds"] = waited
        result["loadavg_before"] = [round(x, 2) for x in load_before]
        result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        return result
    finally:
        if db_name:
            pg.drop_database(db_name)
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    # SIGTERM unwinds like Ctrl-C, so temp files, databases and the server are cleaned up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if argv[:1] == ["worker"]:
        from bench import worker

        worker.main(argv[1:])
        return
    if argv[:1] == ["embedders"]:
        # Runs the other parts once per local model, then compares them.
        from bench import embedders

        embedders.main(argv[1:])
        return
    if argv[:1] == ["calibrate"]:
        # The synthetic memories' noise for the configured embedder (bench/synthetic_noise.py).
        from bench import synthetic_noise as calibration

        calibration.main(argv[1:])
        return
    if argv[:1] == ["served"] and "--tenants" in argv:
        # Many end users of one product (bench/tenants.py).
        from bench import tenants

        tenants.main(argv[1:])
        return
    if argv[:1] == ["relations"]:
        # The relationship set against the context hint, entities linked and not
        # (bench/relations.py): each database in a worker, results in bench/results/issue45/.
        from bench import relations

        relations.main(argv[1:], worker=_worker)
        return
    if argv[:1] == ["fair_writes"]:
        # Other users' saves during a large import and an erasure (bench/fair_writes.py).
        from bench import fair_writes

        fair_writes.main(argv[1:])
        return
    if argv[:1] == ["served"]:
        # Its own options (and its own databases, gunicorn and client processes).
        from bench import served

        served.main(argv[1:])
        return

    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "part",
        choices=["run", "quality", "latency", "sweep", "vague", "tune", "graphs", "report"],
    )
    parser.add_argument("--data", help="LOCOMO dev JSON (not in the repository; CC BY-NC 4.0)")
    parser.add_argument("--db", default=",".join(DATABASES), help="sqlite,postgresql")
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument(
        "--sweep",
        choices=["auto", "always", "never"],
        default="auto",
        help="weight sweep after the quality run: auto = only when the target is missed",
    )
    parser.add_argument(
        "--entities",
        choices=["none", "rules"],
        default="none",
        help="quality: link each turn's memory to the entities the rule extractor reads in it",
    )
    parser.add_argument("--sizes", help="latency sizes, default 10000,100000")
    parser.add_argument("--queries", type=int, help="latency queries per size, default 200")
    parser.add_argument(
        "--grid",
        help="vague: a JSON list of Weights overrides, one setting each "
        "(default bench.vague.GRID), e.g. '[{}, {\"similarity_floor\": 0.1}]'",
    )
    parser.add_argument(
        "--configs", help="tune: a JSON file of the settings to try (default bench.tune.CONFIGS)"
    )
    parser.add_argument("--name", help="results file name (default: the part, -quick)")
    parser.add_argument("--docs", action="store_true", help="write docs even for --quick")
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0,
        metavar="SECONDS",
        help="before each part, wait up to this long for the load average to drop below 1",
    )
    args = parser.parse_args(argv)

    if args.part == "report":
        write_docs()
        return
    if args.part in ("run", "quality", "sweep", "tune") and not args.data:
        parser.error("--data is required for the quality part")
    if args.grid is not None:
        try:
            grid = json.loads(args.grid)
        except json.JSONDecodeError as error:
            parser.error(f"--grid is not JSON: {error}")
        if not isinstance(grid, list) or not all(isinstance(s, dict) for s in grid):
            parser.error(
                '--grid must be a JSON list of objects, e.g. [{}, {"similarity_floor": 0}]'
            )
    databases = [d.strip() for d in args.db.split(",") if d.strip()]
    for database in databases:
        if database not in DATABASES:
            parser.error(f"unknown database {database!r}")
    if args.part == "graphs":
        if "postgresql" not in databases:
            parser.error("graphs times PostgreSQL's HNSW graphs: --db postgresql")
        databases = ["postgresql"]

    started = time.perf_counter()
    results: dict = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python -m bench " + shlex.join(argv),
            "machine": machine(),
            "git": git_commit(),
            "quick": args.quick,
            "embedder": embedder_description(),
            "synthetic_noise": synthetic_noise_calibration(),
        }
    }
    pg = None
    if "postgresql" in databases:
        from bench.pg import BenchPostgres

        pg = BenchPostgres()

    parts = ["quality", "latency"] if args.part == "run" else [args.part]
    try:
        for part in parts:
            extra: list[str] = []
            if part in ("quality", "sweep", "tune") or (part == "latency" and args.data):
                extra += ["--data", str(Path(args.data).resolve())]
                if part == "quality":
                    extra += ["--sweep", args.sweep]
                if part in ("quality", "sweep") and args.entities != "none":
                    extra += ["--entities", args.entities]
            if part == "graphs":
                size = args.sizes or ("3000" if args.quick else "100000")
                extra += [
                    "--sizes",
                    size,
                    "--queries",
                    str(args.queries or (30 if args.quick else 400)),
                ]
            if part == "latency":
                sizes = args.sizes or ("1000,5000" if args.quick else "10000,100000")
                queries = args.queries or (30 if args.quick else 200)
                extra += ["--sizes", sizes, "--queries", str(queries)]
            if part == "tune" and args.configs:
                extra += ["--configs", str(Path(args.configs).resolve())]
            if part == "vague" and args.grid is not None:
                extra += ["--grid", args.grid]
            if args.quick:
                extra.append("--quick")
            results.setdefault(part, {})
            for database in databases:
                results[part][database] = _worker(part, database, extra, pg, args.wait_idle)
    finally:
        if pg is not None:
            pg.stop()
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)

    name = args.name or (args.part + ("-quick" if args.quick else ""))
    results_write(name, results)
    if args.part == "vague":
        print(vague.table(results))
    print(report.summary(results))
    if not args.quick or args.docs:
        write_docs(extra=results if args.quick else None)
