"""`python -m bench.slow_clients [--seconds 20] [--stalled 16] [--fronts nginx,none]`: what
slow clients do to the production set, with and without its front.

For each front (FRONT=nginx, the default of scripts/serve --production; FRONT=none, gunicorn
alone; `uvicorn`, gunicorn alone with uvicorn's worker class, whose event loop reads
requests), `scripts/serve --production` starts on a fresh database of the benchmark's
PostgreSQL and Redis database 7 (tests/slow_clients.py has the cast, which
tests/test_slow_clients.py uses too). A client then times its requests (/healthz, /readyz, a
search, a create, in turn, each on a new connection, one every 0.2 s, giving up after
--timeout s): first alone, then while --stalled connections send part of a request and
stall, 4 send a header byte per second and 4 a body byte per second. Writes
bench/results/slow-clients.json and a markdown table on stdout."""

import argparse
import datetime as dt
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.common import git_commit, machine, results_write

REDIS_URL = "redis://127.0.0.1:6379/7"
TRICKLING = 4
SLOW_BODIES = 4


def run_front(front: str, *, database_url: str, args) -> dict:
    import django
    import redis

    # tests.topology imports models; no database is opened in this process.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
    django.setup()
    from tests.slow_clients import (
        Probe,
        SlowClients,
        api_key,
        manage,
        production_environment,
        remove_front_directory,
        serve_production,
        summary,
    )
    from tests.topology import free_port

    tmp = Path(tempfile.mkdtemp(prefix="memory-slow-clients-"))
    broker = redis.Redis.from_url(REDIS_URL)
    broker.flushdb()
    env = production_environment(
        database_url=database_url, redis_url=REDIS_URL, port=free_port(), tmp=tmp
    )
    env["FRONT"] = front
    command: tuple[str, ...] = ("scripts/serve", "--production")
    started = time.perf_counter()
    if front == "uvicorn":
        # gunicorn alone with uvicorn's worker class on Django's ASGI app (scripts/serve has
        # no such mode): the web part only, after the migration serve would run.
        manage(env, "migrate", "--noinput")
        command = (sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py")
        command += ("--bind", f"127.0.0.1:{env['PORT']}", "--workers", env["WEB_CONCURRENCY"])
        command += ("--worker-class", "uvicorn.workers.UvicornWorker", "config.asgi:application")
    service = serve_production(env, tmp, command)
    result: dict = {"start_seconds": round(time.perf_counter() - started, 1)}
    try:
        probe = Probe(int(env["PORT"]), api_key(env), timeout=args.timeout)
        probe.run(3, interval=0.1)  # warm-up
        result["alone"] = summary(probe.run(args.seconds, interval=0.2))
        attack = SlowClients(
            int(env["PORT"]), stalled=args.stalled, trickling=TRICKLING, slow_bodies=SLOW_BODIES
        )
        attack.start()
        time.sleep(2)
        held = []
        try:
            answers = probe.run(args.seconds, interval=0.2, during=lambda: held.append(attack.open))
        finally:
            attack.stop()
        result["with_slow_clients"] = {
            **summary(answers),
            "slow_connections": args.stalled + TRICKLING + SLOW_BODIES,
            "slow_connections_open_min": min(held),
            "slow_connections_opened": attack.opened,
        }
        # Once the slow clients have gone, the next request.
        after = probe.request()
        result["first_request_after"] = {"status": after.status, "ms": round(after.seconds * 1000)}
    finally:
        service.stop()
        remove_front_directory(env)
        broker.flushdb()
        broker.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def markdown(results: dict) -> str:
    lines = [
        "| front | alone p50 / p95 ms | with slow clients: answered | p50 / p95 / max ms |",
        "|---|---|---|---|",
    ]
    for front, result in results["fronts"].items():
        if "error" in result:
            lines.append(f"| {front} | {result['error'][:200]} | | |")
            continue
        alone, attacked = result["alone"], result["with_slow_clients"]
        lines.append(
            f"| {front} | {alone['p50_ms']} / {alone['p95_ms']} | "
            f"{attacked['answered']} of {attacked['requests']} | "
            f"{attacked['p50_ms']} / {attacked['p95_ms']} / {attacked['max_ms']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench.slow_clients", description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0, help="each phase (20)")
    parser.add_argument("--stalled", type=int, default=16, help="stalled connections (16)")
    parser.add_argument("--timeout", type=float, default=10.0, help="client gives up (10 s)")
    parser.add_argument("--fronts", default="nginx,none", help="nginx,none,uvicorn")
    parser.add_argument("--name", default="slow-clients", help="results file name")
    args = parser.parse_args(argv)

    from bench.pg import BenchPostgres

    results: dict = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python -m bench.slow_clients " + shlex.join(argv),
            "machine": machine(),
            "git": git_commit(),
            "seconds": args.seconds,
            "timeout_seconds": args.timeout,
        },
        "fronts": {},
    }
    pg = BenchPostgres()
    try:
        for front in [f.strip() for f in args.fronts.split(",") if f.strip()]:
            print(f"== slow clients, front {front}", flush=True)
            db_name, url = pg.create_database("slow")
            try:
                results["fronts"][front] = run_front(front, database_url=url, args=args)
            except Exception as exc:  # the other fronts' figures are still written
                results["fronts"][front] = {"error": f"{type(exc).__name__}: {exc}"}
            finally:
                pg.drop_database(db_name)
    finally:
        pg.stop()
    results_write(args.name, results)
    print(markdown(results))


if __name__ == "__main__":
    main()
