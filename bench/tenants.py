"""`python -m bench served --tenants`: many end users of one product, as the README deploys
the service (gunicorn with config/gunicorn.conf.py, DEBUG off), timed over real sockets from
other processes.

Per database (PostgreSQL: 1,000,000 memories of 10,000 users; SQLite: 100,000 of 1,000; the
bands and the activity are bench/tenants_plan.py's):
1. a set-up process migrates, creates the users with their synthetic memories (bench/bulk.py,
   one load: the HNSW index is built once at the end), one API key, and measures the
   database's size;
2. gunicorn starts on 127.0.0.1;
3. per band, `--queries` timed GET /api/memories/search from this process over one
   keep-alive connection, each by a user of the band drawn by activity (X-User-Id). Before
   them, each of those users searches WARM_UP_ROUNDS times as often with texts it is not
   timed with (warm_up_picks), untimed but for a summary: a server that has been answering
   these users holds their graphs and postings in memory, and a server just started (as
   each run's is) reads them from disk, through a page cache that this machine's memory
   reclaim keeps small;
4. the timer process (same database and model) measures, per band, the share of the user's
   exact nearest RECALL_CANDIDATES that the service's search finds, and on PostgreSQL sweeps
   hnsw.ef_search for the heavy users (share found, KNN time);
5. `--clients` client processes search at once for `--seconds`, each search by a user drawn
   by activity over all users: searches/s and latency;
6. RSS (and PSS) of each gunicorn worker at the end.

Results: bench/results/tenants[-quick].json, tables on stdout, and (full runs)
docs/benchmarks.md. The load average before and after each database's run is recorded:
timings on a shared 2-core machine are only as good as the machine is idle."""

import argparse
import functools
import http.client
import itertools
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from bench.served_client import concurrent_searches
from bench.served_runner import (
    ServedRun,
    add_service_options,
    benchmark_postgres,
    new_database,
    results_meta,
    run_setup,
    service_plan,
    write_results,
)
from bench.tenants_plan import BANDS, PlannedUser, searchers, user_sizes

# Untimed searches per timed search of a band, by the same users with other texts.
WARM_UP_ROUNDS = 3
# A PostgreSQL backend hands its block counts to pg_stat_database within 10 s of going idle
# (PGSTAT_IDLE_INTERVAL); the counts are read this long after a band's searches end.
STATS_FLUSH_SECONDS = 11
EXACT_PER_BAND = 40
SWEEP_QUERIES = 40
SIZES = {"postgresql": (1_000_000, 10_000), "sqlite": (100_000, 1_000)}
QUICK_SIZES = (40_000, 200)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench served --tenants", description=__doc__)
    parser.add_argument("--tenants", action="store_true", help="(selects this benchmark)")
    parser.add_argument("--db", default="sqlite,postgresql", help="sqlite,postgresql")
    parser.add_argument("--memories", type=int, help="all users' memories (see SIZES)")
    parser.add_argument("--users", type=int, help="end users (see SIZES)")
    parser.add_argument("--quick", action="store_true", help="smoke size: 40,000 of 200 users")
    parser.add_argument("--queries", type=int, help="timed searches per band (150; quick 40)")
    add_service_options(parser)
    parser.add_argument("--name", help="results file name (default tenants, tenants-quick)")
    parser.add_argument(
        "--prepare-only",
        metavar="DIR",
        help="load the databases and keep them (their plan, key and queries in DIR), time "
        "nothing: the load need not wait for an idle machine",
    )
    parser.add_argument(
        "--prepared", metavar="DIR", help="time the databases --prepare-only DIR loaded"
    )
    args = parser.parse_args(argv)
    databases = [d.strip() for d in args.db.split(",") if d.strip()]
    for database in databases:
        if database not in SIZES:
            parser.error(f"unknown database {database!r}")

    started = time.perf_counter()
    results: dict = {"meta": results_meta(argv, quick=args.quick), "tenants": {}}
    with benchmark_postgres("postgresql" in databases) as pg:
        for database in databases:
            total, users = QUICK_SIZES if args.quick else SIZES[database]
            plan = {
                "memories": args.memories or total,
                "users": args.users or users,
                "queries": args.queries or (40 if args.quick else 150),
                **service_plan(args),
            }
            print(f"== tenants on {database}: {plan}", flush=True)
            prepared = Path(args.prepare_only or args.prepared or "") / database
            if args.prepare_only:
                _prepare(database, plan, pg, prepared)
                continue
            results["tenants"][database] = _run_database(
                database, plan, pg, prepared if args.prepared else None
            )
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    if args.prepare_only:
        print(f"prepared in {args.prepare_only}: time them with --prepared {args.prepare_only}")
        return

    from bench.tenants_tables import markdown

    name = args.name or ("tenants-quick" if args.quick else "tenants")
    write_results(name, results, markdown, docs=not args.quick)


def _prepare(database: str, plan: dict, pg, where: Path) -> dict:
    """A database with the plan's users and memories; its URL, plan and set-up in `where`."""
    where.mkdir(parents=True, exist_ok=True)
    url = new_database(database, pg, "tenants", where)[1]
    _, setup = _load(url, plan, where)
    (where / "url").write_text(url)
    return setup


def _load(url: str, plan: dict, where: Path) -> tuple[list[PlannedUser], dict]:
    """The plan's users (their sizes in `where`/plan.json) loaded by the set-up process."""
    planned = user_sizes(plan["memories"], plan["users"])
    (where / "plan.json").write_text(json.dumps([asdict(user) for user in planned]))
    options = ["--plan", str(where / "plan.json"), "--queries", str(plan["queries"])]
    return planned, run_setup("bench.tenants", url, where, *options)


def _run_database(database: str, plan: dict, pg, prepared: Path | None) -> dict:
    with ServedRun(database, pg, label="tenants", module="bench.tenants") as run:
        if prepared is None:
            url = run.create_database()
            planned, setup = _load(url, plan, run.tmp)
        else:
            url = (prepared / "url").read_text()
            planned = [
                PlannedUser(**user) for user in json.loads((prepared / "plan.json").read_text())
            ]
            setup = json.loads((prepared / "setup.json").read_text())
        queries = setup["queries"]
        key = {"Authorization": f"Bearer {setup['key']}"}
        served_by = run.start(
            url,
            queries,
            workers=plan["workers"],
            headers={**key, "X-User-Id": planned[0].external_id},
        )
        timer = run.timer
        memories = sum(user.memories for user in planned)
        database_info = timer.ask({"database": True})
        out: dict = {
            "memories": memories,
            "users": len(planned),
            "bands": _band_counts(planned),
            "load": setup["load"],
            "database": database_info,
            "bytes_per_million_memories": round(database_info["bytes"] / memories * 1e6),
            **served_by,
            "search": {},
            "found_of_exact": {},
        }
        blocks = None
        if not url.startswith("sqlite"):
            blocks = functools.partial(timer.ask, {"blocks": True})
        for band, _, _ in BANDS:
            users = searchers(planned, plan["queries"], band=band, seed=len(band))
            out["search"][band] = _timed_searches(run.port, key, users, queries, blocks=blocks)
            picks = [
                [user.external_id, (i * 7) % len(queries)]
                for i, user in enumerate(users[:EXACT_PER_BAND])
            ]
            shares = timer.ask({"exact": picks})
            out["found_of_exact"][band] = {
                "queries": len(shares),
                "mean": round(sum(shares) / len(shares), 4),
                "lowest": round(min(shares), 4),
            }
        heavy = searchers(planned, SWEEP_QUERIES, band="heavy", seed=99)
        sweep = [[user.external_id, (i * 11) % len(queries)] for i, user in enumerate(heavy)]
        out["heavy_ef_search_sweep"] = timer.ask({"sweep": sweep})
        mixed = searchers(planned, 5000, seed=5)
        out["concurrent"] = concurrent_searches(
            run.port,
            key,
            queries,
            plan["clients"],
            plan["seconds"],
            users=[user.external_id for user in mixed],
            meter=run.meter(),
        )
        out.update(run.machine_after())
        return out


def _band_counts(planned) -> dict:
    out: dict = {}
    for user in planned:
        band = out.setdefault(user.band, {"users": 0, "memories": 0})
        band["users"] += 1
        band["memories"] += user.memories
    return out


def timed_picks(users, queries: list[str]) -> list[tuple[str, int]]:
    """The band's timed searches: (external id, query index), the i-th by users[i]."""
    return [(user.external_id, (i * 7) % len(queries)) for i, user in enumerate(users)]


def warm_up_picks(
    picks: list[tuple[str, int]], queries: list[str], rounds: int
) -> list[tuple[str, int]]:
    """`rounds` searches for each timed one, by the same user, each with a text that user is
    never timed with, in the order of the timed searches. A user timed with every text (a
    band of one user) warms up with those texts: a warm-up must still load what the first
    search of a user loads (SQLite's mirror of their vectors)."""
    timed: dict[str, list[int]] = {}
    for user, index in picks:
        timed.setdefault(user, []).append(index)
    texts = {
        user: itertools.cycle([i for i in range(len(queries)) if i not in indices] or indices)
        for user, indices in timed.items()
    }
    return [(user, next(texts[user])) for _ in range(rounds) for user, _ in picks]


def _timed_searches(port: int, key: dict, users, queries: list[str], *, blocks=None) -> dict:
    """One band's searches, one at a time: latency, and where the time went (each answer's
    Server-Timing stages, bench.served_client.breakdown). Then the same searches once more
    (`again`): what a search costs once its pages are in memory. `blocks()` gives the
    database's block counts (PostgreSQL: read from outside shared_buffers, and hit), so the
    timed searches' reads per search are reported beside their timings."""
    from bench.metrics import latency_summary
    from bench.served_client import breakdown, exchange, search_path

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def search(user: str, index: int) -> tuple[float, dict]:
        started = time.perf_counter()
        _, timings = exchange(
            connection, "GET", search_path(queries[index]), {**key, "X-User-Id": user}
        )
        return time.perf_counter() - started, timings

    picks = timed_picks(users, queries)
    warm_up = [
        search(user, index)[0] for user, index in warm_up_picks(picks, queries, WARM_UP_ROUNDS)
    ]
    counts_before = _block_counts(blocks)
    timed = [search(user, index) for user, index in picks]
    counts_after = _block_counts(blocks)
    again = [search(user, index)[0] for user, index in picks]
    connection.close()
    seconds = [elapsed for elapsed, _ in timed]
    summary = latency_summary(seconds)
    # The first searches of these users since the server started: pages read from disk.
    summary["warm_up"] = {"rounds": WARM_UP_ROUNDS, **latency_summary(warm_up)}
    summary["again"] = latency_summary(again)
    if counts_before and counts_after:
        summary["blocks_per_search"] = {
            kind: round((counts_after[kind] - counts_before[kind]) / len(picks), 1)
            for kind in ("read", "hit")
        }
    summary["memories_of_searchers_mean"] = round(sum(u.memories for u in users) / len(users))
    summary["breakdown"] = breakdown(seconds, [timings for _, timings in timed])
    return summary


def _block_counts(blocks) -> dict | None:
    """The database's block counts once the server's backends have reported theirs."""
    if blocks is None:
        return None
    time.sleep(STATS_FLUSH_SECONDS)
    return blocks()


if __name__ == "__main__":
    from bench.tenants_roles import finish_main, setup_main, timer_main

    roles = {"setup": setup_main, "timer": timer_main, "finish": finish_main}
    if sys.argv[1:2] and sys.argv[1] in roles:
        roles[sys.argv[1]](sys.argv[2:])
    else:
        sys.exit(
            "usage: python -m bench.tenants setup|timer ... (or python -m bench served --tenants)"
        )
