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
import sys
import time

from bench.served_client import (
    concurrent_batches,
    concurrent_searches,
    post_batches,
    post_creates,
    timed_contexts,
    timed_searches,
)
from bench.served_roles import EXTERNAL_ID, FILTERED_APP, setup_main, timer_main
from bench.served_runner import (
    ServedRun,
    add_service_options,
    benchmark_postgres,
    results_meta,
    service_plan,
    write_results,
)
from bench.served_tables import markdown

# The parts: bench/served_runner.py makes and loads the database, starts gunicorn and the
# timer process and cleans up (as for bench/tenants.py), bench/served_client.py times the
# requests, bench/served_roles.py is what runs inside the database
# (`python -m bench.served setup|timer`, dispatched at the end of this module).

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
    add_service_options(parser)
    parser.add_argument("--creates", type=int, help="single POST /api/memories (100)")
    parser.add_argument("--batch-size", type=int, default=100, help="memories per batch (100)")
    parser.add_argument("--batches", type=int, help="batches posted (20; quick 5)")
    parser.add_argument("--name", help="results file name (default served, served-quick)")
    args = parser.parse_args(argv)
    quick = args.quick
    plan = {
        "memories": args.memories or (2000 if quick else 100_000),
        "queries": args.queries or (60 if quick else 300),
        **service_plan(args),
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
    results: dict = {"meta": results_meta(argv, quick=quick, plan=plan), "served": {}}
    with benchmark_postgres(any(d == "postgresql" and url is None for d, url in targets)) as pg:
        for database, url in targets:
            print(f"== served on {database}", flush=True)
            results["served"][database] = _run_database(database, url, plan, pg)
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    name = args.name or ("served-quick" if quick else "served")
    write_results(name, results, markdown, docs=not quick)


def _run_database(database: str, url: str | None, plan: dict, pg) -> dict:
    with ServedRun(database, pg, label="served", module="bench.served") as run:
        if url is None:
            url = run.create_database()
        ingest = plan["creates"] + 2 * plan["batch_size"] * plan["batches"]
        options = ["--memories", str(plan["memories"]), "--queries", str(plan["queries"])]
        setup = run.setup(url, *options, "--ingest", str(ingest))
        headers = {"Authorization": f"Bearer {setup['key']}", "X-User-Id": EXTERNAL_ID}
        served_by = run.start(url, setup["queries"], workers=plan["workers"], headers=headers)
        out = {
            "memories": plan["memories"],
            "load": setup["load"],
            "database": setup["database"],
            **served_by,
        }
        port, timer = run.port, run.timer
        out["search"] = timed_searches(port, headers, setup["queries"], timer)
        # The same searches among the 1% of memories a filter matches (issue 46).
        out["search_filtered"] = timed_searches(
            port, headers, setup["queries"], timer, memory_filter={"metadata.app": FILTERED_APP}
        )
        out["context"] = timed_contexts(port, headers, setup["queries"])
        out["exact_top"] = timer.exactness(EXACT_QUERIES)
        # What each phase cost the machine's cores, per search or memory (bench/cpu.py).
        meter = run.meter()
        out["concurrent"] = concurrent_searches(
            port, headers, setup["queries"], plan["clients"], plan["seconds"], meter=meter
        )
        items = setup["ingest"]
        out["create"] = post_creates(port, headers, items[: plan["creates"]])
        size, count = plan["batch_size"], plan["batches"]
        start = plan["creates"]
        out["batch"] = post_batches(
            port, headers, items[start : start + size * count], size, count, meter=meter
        )
        # The same number of batches again from BATCH_CLIENTS clients at once: one client
        # leaves a core idle while the other embeds or writes; a bulk load runs several.
        out["batch_concurrent"] = concurrent_batches(
            port, headers, items[start + size * count :], size, count, BATCH_CLIENTS, meter=meter
        )
        out.update(run.machine_after(worker_log=True))
        return out


if __name__ == "__main__":
    roles = {"setup": setup_main, "timer": timer_main}
    if sys.argv[1:2] and sys.argv[1] in roles:
        roles[sys.argv[1]](sys.argv[2:])
    else:
        sys.exit("usage: python -m bench.served setup|timer ... (or python -m bench served)")
