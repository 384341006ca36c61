"""`python -m bench.embedded_server [--requests 200] [--connections 50]`: what a request costs
on the embedded default (`./scripts/serve`: gunicorn, one process, SQLite, the embedded worker)
against the production set (`./scripts/serve --production`: nginx in front of gunicorn,
PostgreSQL, Redis and Celery), both started as the README starts them and measured in one
run; and, for the record, Django's development server (`manage.py runserver --noreload`, what
`./scripts/serve` ran before issue 42) on the embedded default's database.

Every target is started, then set up over the API (an API key from `manage.py
create_api_key`, then `--memories` memories of one end user through POST
/api/memories/batch); then from this process, a separate client over 127.0.0.1, the targets
taking turns request by request (so a change in the machine's load hits them alike):
`--connections` first requests, each GET /api/memories/<id> on a new connection; then on one
kept-alive connection per target `--requests` rounds of GET /healthz, GET
/api/memories/<id> and GET /api/memories/search. p50/p95 in ms of each. The production
set runs on a fresh database of the benchmark's PostgreSQL (bench/pg.py) and Redis
database 7 (as bench/slow_clients.py), with nginx when it is installed (FRONT=none
otherwise, said in the results). Writes
bench/results/embedded-server-<commit>.json (or --name), a markdown table on stdout, and
rewrites docs/benchmarks.md."""

import argparse
import datetime as dt
import http.client
import json
import os
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import ROOT, git_commit, machine, results_write
from bench.report_embedded_server import embedded_server_section, markdown  # noqa: F401

REDIS_URL = "redis://127.0.0.1:6379/7"
STARTUP_SECONDS = 240
USER = "bench-embedded-server"
# The targets measured by default, in this order (the old one last, for the record).
TARGETS = ("embedded", "production", "runserver")


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]

    return {
        "n": len(ordered),
        "p50_ms": round(at(0.50) * 1000, 2),
        "p95_ms": round(at(0.95) * 1000, 2),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
    }


class Client:
    """One kept-alive connection; every request timed from its first byte sent to its last
    byte read, and checked."""

    def __init__(self, port: int, headers: dict) -> None:
        self.port = port
        self.headers = headers
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def timed(self, method: str, path: str, body: dict | None = None) -> tuple[float, object]:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        self.connection.request(method, path, body=data, headers=headers)
        response = self.connection.getresponse()
        payload = response.read()
        seconds = time.perf_counter() - started
        if response.status >= 300:
            raise RuntimeError(f"{method} {path} answered {response.status}: {payload[:300]!r}")
        if response.will_close:
            raise RuntimeError(f"{method} {path}: the server closed the kept-alive connection")
        return seconds, json.loads(payload) if payload else None

    def close(self) -> None:
        self.connection.close()


def set_up(port: int, key: str, memories: int) -> tuple[dict, str]:
    """The end user's memories, through the API; its headers and one memory's path."""
    headers = {"Authorization": f"Bearer {key}", "X-User-Id": USER}
    setup = Client(port, headers)
    items = [
        {"key": f"fact-{n}", "value": f"Fact number {n}: likes hiking trail {n} near the coast"}
        for n in range(memories)
    ]
    setup.timed("POST", "/api/memories/batch", {"memories": items})
    _, page = setup.timed("GET", "/api/memories?page_size=1")
    setup.close()
    return headers, f"/api/memories/{page['data'][0]['id']}"  # type: ignore[index]


def measure(targets: dict[str, tuple[int, dict, str]], *, requests: int, connections: int):
    """targets: name -> (port, headers, a memory's path). The targets take turns, request by
    request, so a change in the machine's load (other processes) hits them alike."""
    first: dict[str, list[float]] = {name: [] for name in targets}
    for _ in range(connections):
        for name, (port, headers, memory_path) in targets.items():
            client = Client(port, headers)
            first[name].append(client.timed("GET", memory_path)[0])
            client.close()
    kinds = ("healthz", "memory", "search")
    reused: dict[str, dict[str, list[float]]] = {
        name: {kind: [] for kind in kinds} for name in targets
    }
    clients = {name: Client(port, headers) for name, (port, headers, _) in targets.items()}
    for client in clients.values():
        client.timed("GET", "/healthz")  # a connection's first request is not counted
    for _ in range(requests):
        for kind in kinds:
            for name, (_, _, memory_path) in targets.items():
                path = {
                    "healthz": "/healthz",
                    "memory": memory_path,
                    "search": "/api/memories/search?q=hiking+near+the+coast&top_k=5",
                }[kind]
                reused[name][kind].append(clients[name].timed("GET", path)[0])
    for client in clients.values():
        client.close()
    return {
        name: {
            "first_request_new_connection": percentiles(first[name]),
            "reused_connection": {kind: percentiles(reused[name][kind]) for kind in kinds},
        }
        for name in targets
    }


def manage(env: dict, *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {arguments[0]}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_answering(port: int, process: subprocess.Popen, log: Path) -> float:
    """Seconds until /readyz answers 200 on the port; fails if the process ends first."""
    started = time.perf_counter()
    while time.perf_counter() - started < STARTUP_SECONDS:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log.read_text()[-3000:]}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", "/readyz")
            status = connection.getresponse().status
            connection.close()
            if status == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer:\n{log.read_text()[-3000:]}")


def base_environment() -> dict:
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CELERY_", "DATABASE_", "PROMETHEUS_", "METRICS_", "LLM_"))
        and name not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "CACHE_URL")
        and name not in ("HOST", "PORT", "TRUSTED_PROXY_COUNT", "FRONT", "SERVER_TIMING")
    }


class Target:
    """One server, started as the README starts it; stop() ends it and what it left."""

    def __init__(self, name: str, process: subprocess.Popen, port: int, details: dict) -> None:
        self.name, self.process, self.port, self.details = name, process, port, details

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.name == "production":
            shutil.rmtree(ROOT / "var" / "nginx" / str(self.port), ignore_errors=True)


def start_target(
    target: str, tmp: Path, args, database_url: Callable[[], str]
) -> tuple[Target, str]:
    """The server answering, and an API key of it."""
    port = free_port()
    env = {
        **base_environment(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "PYTHONUNBUFFERED": "1",
        # No LLM_* (base_environment leaves them out): the rule extractor, should anything
        # extract, and no model call (LLM_BASE_URL alone would stop start-up).
    }
    details: dict = {}
    if target in ("embedded", "runserver"):
        # As ./scripts/serve runs it when nothing is set: DEBUG on, SQLite.
        env.update(DEBUG="true", DATABASE_URL=f"sqlite:///{tmp / f'{target}.sqlite3'}")
        if target == "embedded":
            command = ["scripts/serve"]
            details["serves"] = "scripts/serve: gunicorn, 1 process, gthread threads; SQLite"
        else:
            manage(env, "migrate", "--noinput")
            command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
            details["serves"] = "manage.py runserver --noreload (before issue 42); SQLite"
    else:
        front = "nginx" if shutil.which("nginx", path=f"{env['PATH']}:/usr/sbin") else "none"
        env.update(
            DEBUG="false",
            SECRET_KEY=secrets.token_urlsafe(50),
            DATABASE_URL=database_url(),
            CELERY_BROKER_URL=REDIS_URL,
            CACHE_URL=REDIS_URL,
            FRONT=front,
            WEB_CONCURRENCY="2",
            WORKER_CONCURRENCY="1",
            PROMETHEUS_MULTIPROC_DIR=str(tmp / "metrics"),
        )
        command = ["scripts/serve", "--production"]
        details["serves"] = (
            f"scripts/serve --production: {'nginx, ' if front == 'nginx' else ''}gunicorn "
            "(2 workers), Celery; PostgreSQL, Redis"
        )
    log = tmp / f"{target}.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    server = Target(target, process, port, details)
    try:
        details["start_seconds"] = round(wait_answering(port, process, log), 1)
        key = manage(env, "create_api_key", "bench", "--scopes", "read,write").strip()
    except BaseException:
        server.stop()
        raise
    return server, key.splitlines()[-1]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench.embedded_server", description=__doc__)
    parser.add_argument("--targets", default=",".join(TARGETS), help=",".join(TARGETS))
    parser.add_argument("--requests", type=int, default=200, help="rounds, kept alive (200)")
    parser.add_argument("--connections", type=int, default=50, help="new connections (50)")
    parser.add_argument("--memories", type=int, default=50, help="memories of the user (50)")
    parser.add_argument("--target-ms", type=float, default=2.0, help="allowed gap (2 ms)")
    parser.add_argument("--name", help="results file name (embedded-server-<commit>)")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/benchmarks.md")
    args = parser.parse_args(argv)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for target in targets:
        if target not in TARGETS:
            parser.error(f"unknown target {target!r}")

    started = time.perf_counter()
    commit = git_commit()
    results: dict = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python -m bench.embedded_server " + shlex.join(argv),
            "machine": machine(),
            "git": commit,
            "requests": args.requests,
            "connections": args.connections,
            "memories": args.memories,
            "target_ms": args.target_ms,
        },
        "embedded_server": {},
    }
    tmp = Path(tempfile.mkdtemp(prefix="memory-embedded-server-"))
    pg = None
    databases: list[str] = []

    def database_url() -> str:
        nonlocal pg
        import redis

        from bench.pg import BenchPostgres

        broker = redis.Redis.from_url(REDIS_URL)
        broker.flushdb()
        broker.close()
        pg = pg or BenchPostgres()
        name, url = pg.create_database("embedded_server")
        databases.append(name)
        return url

    started_targets: list[Target] = []
    try:
        measured: dict[str, tuple[int, dict, str]] = {}
        for target in targets:
            print(f"== starting {target}", flush=True)
            try:
                server, key = start_target(target, tmp, args, database_url)
                started_targets.append(server)
                headers, memory_path = set_up(server.port, key, args.memories)
                measured[target] = (server.port, headers, memory_path)
                results["embedded_server"][target] = server.details
            except Exception as exc:  # the other targets' figures are still written
                results["embedded_server"][target] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"== measuring {', '.join(measured)}, in turn", flush=True)
        figures = measure(measured, requests=args.requests, connections=args.connections)
        for target, block in figures.items():
            results["embedded_server"][target].update(block)
    finally:
        for server in started_targets:
            server.stop()
        if pg is not None:
            for name in databases:
                pg.drop_database(name)
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    embedded = results["embedded_server"].get("embedded", {})
    production = results["embedded_server"].get("production", {})
    if "reused_connection" in embedded and "reused_connection" in production:
        results["reused_gap_ms"] = {
            name: round(
                embedded["reused_connection"][name]["p50_ms"]
                - production["reused_connection"][name]["p50_ms"],
                2,
            )
            for name in embedded["reused_connection"]
        }
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)

    name = args.name or f"embedded-server-{commit.split('+')[0]}"
    results_write(name, results)
    print("\n".join(markdown(results)))
    if not args.no_docs:
        from bench.report import write_docs

        write_docs()


if __name__ == "__main__":
    main()
