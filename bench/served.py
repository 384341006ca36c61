"""`python -m bench served`: the service as the README deploys it (gunicorn with
config/gunicorn.conf.py, DEBUG off), timed over real sockets from other processes.

Per database (a throwaway SQLite file and a fresh database on the benchmark's PostgreSQL, or
the one --database-url names):
1. a set-up process migrates, makes one end user with N synthetic memories (bench/synthetic.py,
   bulk-inserted by bench/bulk.py) and an API key, and writes the query texts;
2. gunicorn starts on 127.0.0.1; time to first answer = start until an authenticated
   GET /api/memories/count answers 200 (the workers load the model before that);
3. this process, a separate client, times GET /api/memories/search over one keep-alive
   connection (Bearer key + X-User-Id, as a product calls it). After each search a timer
   process with the same database and model times the bare KNN
   (get_vector_store().nearest(k=RECALL_CANDIDATES)) and the query embedding of another
   query (half the list further on, so no part finds the pages another part just read);
   the two interleave, so a change in the machine's speed hits all three alike;
4. 8 client processes search at once for a fixed time: searches/s and latency;
5. POST /api/memories one by one, then POST /api/memories/batch: creates p50, memories/s;
6. RSS (and PSS) of each gunicorn worker at the end.

Results: bench/results/served[-quick].json, and markdown tables on stdout. Timings on a
shared 2-core machine are only as good as the machine is idle (see bench/README.md)."""

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    ROOT,
    embedder_description,
    gc_between_requests,
    git_commit,
    machine,
    results_write,
    settle,
    synthetic_noise_calibration,
)
from bench.cpu import service_meter
from bench.pg import DATA_DIR
from bench.report import write_docs
from bench.served_client import (
    concurrent_batches,
    concurrent_searches,
    post_batches,
    post_creates,
    timed_searches,
)
from bench.served_roles import EXTERNAL_ID, setup_main, timer_main
from bench.served_server import Server, Timer
from bench.served_tables import markdown

# The parts: bench/served_server.py starts and stops gunicorn and the timer process,
# bench/served_client.py times the requests, bench/served_roles.py is what runs inside the
# database (`python -m bench.served setup|timer`, dispatched at the end of this module).

# Queries whose nearest RECALL_CANDIDATES found as the service finds them (SQLite: the
# in-process mirror) are compared with the store's exact scan (sqlite-vec; on PostgreSQL an
# exact scan without the HNSW index).
EXACT_QUERIES = 50
BATCH_CLIENTS = 2


def main(argv: list[str]) -> None:

    parser = argparse.ArgumentParser(prog="python -m bench served", description=__doc__)
    parser.add_argument("--db", default="sqlite,postgresql", help="sqlite,postgresql")
    parser.add_argument(
        "--database-url",
        action="append",
        help="use this fresh database instead of making one (repeat for several): it is "
        "migrated and gets the user, its memories and an API key; --db is then ignored",
    )
    parser.add_argument("--memories", type=int, help="memories of the one user (100000)")
    parser.add_argument("--quick", action="store_true", help="smoke size: 2000 memories")
    parser.add_argument("--queries", type=int, help="timed searches (300)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--seconds", type=float, help="concurrent run length (20; quick 5)")
    parser.add_argument("--creates", type=int, help="single POST /api/memories (100)")
    parser.add_argument("--batch-size", type=int, default=100, help="memories per batch (100)")
    parser.add_argument("--batches", type=int, help="batches posted (20; quick 5)")
    parser.add_argument("--name", help="results file name (default served, served-quick)")
    args = parser.parse_args(argv)
    quick = args.quick
    plan = {
        "memories": args.memories or (2000 if quick else 100_000),
        "queries": args.queries or (60 if quick else 300),
        "workers": args.workers,
        "clients": args.clients,
        "seconds": args.seconds or (5.0 if quick else 20.0),
        "creates": args.creates or (30 if quick else 100),
        "batch_size": args.batch_size,
        "batches": args.batches or (5 if quick else 20),
    }
    if args.database_url:
        targets = [
            ("sqlite" if url.startswith("sqlite:") else "postgresql", url)
            for url in args.database_url
        ]
    else:
        targets = [(d.strip(), None) for d in args.db.split(",") if d.strip()]
        for database, _ in targets:
            if database not in ("sqlite", "postgresql"):
                parser.error(f"unknown database {database!r}")

    started = time.perf_counter()
    results: dict = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python -m bench served " + shlex.join(argv),
            "machine": machine(),
            "git": git_commit(),
            "quick": quick,
            "embedder": embedder_description(),
            "gc_between_requests": gc_between_requests(),
            "synthetic_noise": synthetic_noise_calibration(),
            "plan": plan,
        },
        "served": {},
    }
    pg = None
    if any(d == "postgresql" and url is None for d, url in targets):
        from bench.pg import BenchPostgres

        pg = BenchPostgres()
    try:
        for database, url in targets:
            print(f"== served on {database}", flush=True)
            results["served"][database] = _run_database(database, url, plan, pg)
    finally:
        if pg is not None:
            pg.stop()
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)

    results_write(args.name or ("served-quick" if quick else "served"), results)
    print(markdown(results))
    if not quick:
        write_docs()


def _run_database(database: str, url: str | None, plan: dict, pg) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="memory-served-"))
    db_name = None
    server = timer = None
    try:
        if url is None:
            if database == "sqlite":
                url = f"sqlite:///{tmp / 'served.sqlite3'}"
            else:
                db_name, url = pg.create_database("served")
        setup = _setup(url, plan, tmp)
        settle()
        load_before = os.getloadavg()
        server = Server(url, workers=plan["workers"], log=tmp / "gunicorn.log")
        headers = {"Authorization": f"Bearer {setup['key']}", "X-User-Id": EXTERNAL_ID}
        first_answer = server.start(headers)
        timer = Timer(url, tmp / "queries.json")
        out = {
            "memories": plan["memories"],
            "load": setup["load"],
            "database": setup["database"],
            "gunicorn": {"workers": plan["workers"], "config": "config/gunicorn.conf.py"},
            "time_to_first_answer_s": round(first_answer, 2),
        }
        out["search"] = timed_searches(server.port, headers, setup["queries"], timer)
        out["exact_top"] = timer.exactness(EXACT_QUERIES)
        # What each phase cost the machine's cores, per search or memory (bench/cpu.py).
        meter = service_meter(server.worker_pids, DATA_DIR if database == "postgresql" else None)
        out["concurrent"] = concurrent_searches(
            server.port, headers, setup["queries"], plan["clients"], plan["seconds"], meter=meter
        )
        items = setup["ingest"]
        out["create"] = post_creates(server.port, headers, items[: plan["creates"]])
        size, count = plan["batch_size"], plan["batches"]
        start = plan["creates"]
        out["batch"] = post_batches(
            server.port, headers, items[start : start + size * count], size, count, meter=meter
        )
        # The same number of batches again from BATCH_CLIENTS clients at once: one client
        # leaves a core idle while the other embeds or writes; a bulk load runs several.
        out["batch_concurrent"] = concurrent_batches(
            server.port,
            headers,
            items[start + size * count :],
            size,
            count,
            BATCH_CLIENTS,
            meter=meter,
        )
        out["workers"] = server.worker_memory()
        out["worker_log"] = server.ready_lines()
        out["loadavg_before"] = [round(x, 2) for x in load_before]
        out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        return out
    finally:
        if timer is not None:
            timer.stop()
        if server is not None:
            server.stop()
        if db_name:
            pg.drop_database(db_name)
        shutil.rmtree(tmp, ignore_errors=True)


def _setup(url: str, plan: dict, tmp: Path) -> dict:
    out = tmp / "setup.json"
    ingest = plan["creates"] + 2 * plan["batch_size"] * plan["batches"]
    command = [sys.executable, "-m", "bench.served", "setup", "--database-url", url]
    command += ["--memories", str(plan["memories"]), "--queries", str(plan["queries"])]
    command += ["--ingest", str(ingest), "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True)
    setup = json.loads(out.read_text())
    (tmp / "queries.json").write_text(json.dumps(setup["queries"]))
    return setup


if __name__ == "__main__":
    roles = {"setup": setup_main, "timer": timer_main}
    if sys.argv[1:2] and sys.argv[1] in roles:
        roles[sys.argv[1]](sys.argv[2:])
    else:
        sys.exit("usage: python -m bench.served setup|timer ... (or python -m bench served)")
