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
import http.client
import json
import multiprocessing
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from bench.common import RESULTS, ROOT, embedder_description, git_commit, machine
from bench.report import write_docs
from bench.served_tables import OUTSIDE_STAGES, SEARCH_STAGES, markdown

EXTERNAL_ID = "bench-served"
WARM_UP = 10
TOP_K = 10
# Queries whose nearest RECALL_CANDIDATES found as the service finds them (SQLite: the
# in-process mirror) are compared with the store's exact scan (sqlite-vec; on PostgreSQL an
# exact scan without the HNSW index).
EXACT_QUERIES = 50
BATCH_CLIENTS = 2
STARTUP_TIMEOUT_SECONDS = 180


# --- the orchestrator ------------------------------------------------------------------------


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

    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{args.name or ('served-quick' if quick else 'served')}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {path.relative_to(ROOT)}")
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
        load_before = os.getloadavg()
        setup = _setup(url, plan, tmp)
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
        out["search"] = _searches(server.port, headers, setup["queries"], timer)
        out["exact_top"] = timer.exactness(EXACT_QUERIES)
        out["concurrent"] = _concurrent(
            server.port, headers, setup["queries"], plan["clients"], plan["seconds"]
        )
        items = setup["ingest"]
        out["create"] = _creates(server.port, headers, items[: plan["creates"]])
        size, count = plan["batch_size"], plan["batches"]
        start = plan["creates"]
        out["batch"] = _batches(
            server.port, headers, items[start : start + size * count], size, count
        )
        # The same number of batches again from BATCH_CLIENTS clients at once: one client
        # leaves a core idle while the other embeds or writes; a bulk load runs several.
        out["batch_concurrent"] = _concurrent_batches(
            server.port, headers, items[start + size * count :], size, count, BATCH_CLIENTS
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


class Server:
    """gunicorn as the README's Production section runs it, on a free port of 127.0.0.1."""

    def __init__(self, url: str, *, workers: int, log: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log = log
        self.workers = workers
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "CELERY_BROKER_URL")
        }
        self.env.update(
            DEBUG="false",
            SECRET_KEY=secrets.token_urlsafe(50),
            DATABASE_URL=url,
            ALLOWED_HOSTS="127.0.0.1,localhost",
            # Each answer's Server-Timing header: where its time went (ops.timing).
            SERVER_TIMING="true",
        )
        self.process: subprocess.Popen | None = None

    def start(self, headers: dict) -> float:
        """Start gunicorn; seconds until it answered an authenticated request."""
        command = [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py"]
        command += ["--workers", str(self.workers), "--bind", f"127.0.0.1:{self.port}"]
        started = time.perf_counter()
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.log.read_text()[-3000:]}")
            if time.perf_counter() - started > STARTUP_TIMEOUT_SECONDS:
                raise RuntimeError(f"gunicorn did not answer:\n{self.log.read_text()[-3000:]}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                connection.request("GET", "/api/memories/count", headers=headers)
                response = connection.getresponse()
                body = response.read()
                connection.close()
            except OSError:
                time.sleep(0.02)
                continue
            if response.status != 200:
                raise RuntimeError(f"/api/memories/count answered {response.status}: {body!r}")
            return time.perf_counter() - started

    def worker_pids(self) -> list[int]:
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [int(child) for child in children]

    def worker_memory(self) -> list[dict]:
        """RSS and PSS (RSS with shared pages split among their sharers) per worker, MB."""
        workers = []
        for pid in self.worker_pids():
            row = {"pid": pid}
            for name, path, field in (
                ("rss_mb", "status", "VmRSS:"),
                ("pss_mb", "smaps_rollup", "Pss:"),
            ):
                try:
                    for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
                        if line.startswith(field):
                            row[name] = round(int(line.split()[1]) / 1024, 1)
                except OSError:
                    pass
            workers.append(row)
        return workers

    def ready_lines(self) -> list[str]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [line for line in lines if "ready in" in line or "Booting worker" in line]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Timer:
    """The timer process: bare KNN and query embedding of one query per call, in process."""

    def __init__(self, url: str, queries: Path) -> None:
        command = [sys.executable, "-m", "bench.served", "timer", "--database-url", url]
        command += ["--queries", str(queries)]
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the timer process did not start")

    def time(self, index: int) -> dict:
        self.process.stdin.write(f"{index}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def exactness(self, queries: int) -> dict:
        """Share of the exact nearest RECALL_CANDIDATES that the service's search finds."""
        self.process.stdin.write(f"exact {queries}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


def _request(connection, method: str, path: str, headers: dict, body=None, expect=200):
    return _exchange(connection, method, path, headers, body, expect)[0]


def _exchange(connection, method: str, path: str, headers: dict, body=None, expect=200):
    """The body of the answer and its Server-Timing stages ({name: ms})."""
    from ops.timing import parse_header

    if body is not None:
        body = json.dumps(body)
        headers = {**headers, "Content-Type": "application/json"}
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    if response.status != expect:
        raise RuntimeError(f"{method} {path} answered {response.status}: {data[:300]!r}")
    if response.getheader("Connection", "").lower() == "close":
        raise RuntimeError(f"{method} {path} answered Connection: close (no keep-alive)")
    return data, parse_header(response.getheader("Server-Timing", ""))


def _search_path(query: str) -> str:
    return "/api/memories/search?" + urlencode({"q": query, "top_k": TOP_K})


def _searches(port: int, headers: dict, queries: list[str], timer: Timer) -> dict:
    from bench.metrics import latency_summary

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    n = len(queries)
    for j in range(min(WARM_UP, n)):
        _request(connection, "GET", _search_path(queries[j]), headers)
        timer.time(j)
    http_seconds, knn_seconds, embed_seconds, stages = [], [], [], []
    for j in range(n):
        started = time.perf_counter()
        _, timings = _exchange(connection, "GET", _search_path(queries[j]), headers)
        http_seconds.append(time.perf_counter() - started)
        stages.append(timings)
        timed = timer.time((j + n // 2) % n)
        knn_seconds.append(timed["knn"])
        embed_seconds.append(timed["embed"])
    connection.close()
    out = {
        "http": latency_summary(http_seconds),
        "knn": latency_summary(knn_seconds),
        "embed": latency_summary(embed_seconds),
    }
    for p in ("p50", "p95"):
        floor = out["knn"][f"{p}_ms"] + out["embed"][f"{p}_ms"]
        out[f"ratio_http_to_knn_plus_embed_{p}"] = round(out["http"][f"{p}_ms"] / floor, 2)
    out["breakdown"] = breakdown(http_seconds, stages)
    return out


# The stages of one search in the order it goes through them (ops.timing names), then what
# is left: Django's own work outside them, and the server and the network.
def breakdown(http_seconds: list[float], stages: list[dict]) -> list[dict]:
    """Per stage of the Server-Timing headers: mean, p50 and p95 in ms, and its share of the
    mean HTTP time. The rows add up to the HTTP time: the rest of the app's time (routing,
    middleware, parameters) and what the client measured beyond the app's time (gunicorn,
    the socket, HTTP) are rows of their own."""
    from bench.metrics import latency_summary

    if not stages or not all("app" in timings for timings in stages):
        raise RuntimeError("an answer had no Server-Timing header (SERVER_TIMING is off?)")
    per_request = []
    for seconds, timings in zip(http_seconds, stages, strict=True):
        row = {name: timings.get(name, 0.0) for name, _ in SEARCH_STAGES}
        row[OUTSIDE_STAGES[0]] = timings["app"] - sum(row.values())
        row[OUTSIDE_STAGES[1]] = seconds * 1000 - timings["app"]
        per_request.append(row)
    labels = dict(SEARCH_STAGES)
    total = sum(seconds * 1000 for seconds in http_seconds) / len(http_seconds)
    rows = []
    for name in per_request[0]:
        summary = latency_summary([row[name] / 1000 for row in per_request])
        rows.append(
            {
                "stage": name,
                "what": labels.get(name, name),
                "mean_ms": summary["mean_ms"],
                "p50_ms": summary["p50_ms"],
                "p95_ms": summary["p95_ms"],
                "share": round(summary["mean_ms"] / total, 3),
            }
        )
    return rows


def _client(port, headers, queries, offset, seconds, barrier, results) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    _request(connection, "GET", _search_path(queries[offset % len(queries)]), headers)
    barrier.wait()
    deadline = time.perf_counter() + seconds
    latencies, errors, i = [], 0, offset
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        try:
            _request(connection, "GET", _search_path(queries[i % len(queries)]), headers)
            latencies.append(time.perf_counter() - started)
        except (RuntimeError, OSError):
            errors += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i += 1
    results.put((latencies, errors))


def _concurrent(port, headers, queries, clients: int, seconds: float) -> dict:
    """clients processes, each on its own keep-alive connection, searching for `seconds`."""
    from bench.metrics import latency_summary

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(clients + 1)
    results = context.Queue()
    step = max(1, len(queries) // clients)
    processes = [
        context.Process(
            target=_client, args=(port, headers, queries, i * step, seconds, barrier, results)
        )
        for i in range(clients)
    ]
    for process in processes:
        process.start()
    barrier.wait()
    started = time.perf_counter()
    collected = [results.get(timeout=seconds + 120) for _ in processes]
    wall = time.perf_counter() - started
    for process in processes:
        process.join()
    latencies = [s for got, _ in collected for s in got]
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "searches": len(latencies),
        "errors": sum(errors for _, errors in collected),
        "searches_per_s": round(len(latencies) / wall, 1),
        "latency": latency_summary(latencies) if latencies else None,
    }


def _creates(port, headers, items) -> dict:
    from bench.metrics import latency_summary

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    seconds = []
    for i, (key, value) in enumerate(items):
        started = time.perf_counter()
        _request(connection, "POST", "/api/memories", headers, {"key": key, "value": value}, 201)
        if i >= min(5, len(items) // 5):  # the first few warm up the write path
            seconds.append(time.perf_counter() - started)
    connection.close()
    summary = latency_summary(seconds)
    summary["creates_per_s"] = round(len(seconds) / sum(seconds), 1)
    return summary


def _batches(port, headers, items, batch_size: int, batches: int) -> dict:
    from bench.metrics import latency_summary

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    seconds, stages = [], []
    for b in range(batches):
        chunk = items[b * batch_size : (b + 1) * batch_size]
        body = {"memories": [{"key": key, "value": value} for key, value in chunk]}
        started = time.perf_counter()
        _, timings = _exchange(connection, "POST", "/api/memories/batch", headers, body, 201)
        seconds.append(time.perf_counter() - started)
        stages.append(timings)
    connection.close()
    # Where a batch's time went (Server-Timing): embedding the texts, writing the rows.
    split = {
        f"{stage}_ms_mean": round(sum(t.get(stage, 0.0) for t in stages) / len(stages), 1)
        for stage in ("embedding", "write", "app")
    }
    return {
        **split,
        "batch_size": batch_size,
        "batches": batches,
        "memories": batch_size * batches,
        "seconds": round(sum(seconds), 2),
        "memories_per_s": round(batch_size * batches / sum(seconds), 1),
        "per_batch": latency_summary(seconds),
    }


def _batch_client(port, headers, items, batch_size, batches, barrier, results) -> None:
    barrier.wait()
    results.put(_batches(port, headers, items, batch_size, batches))


def _concurrent_batches(port, headers, items, batch_size: int, batches: int, clients: int):
    """`batches` batches split over `clients` client processes posting at once."""
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(clients + 1)
    results = context.Queue()
    each = batches // clients
    processes = [
        context.Process(
            target=_batch_client,
            args=(
                port,
                headers,
                items[i * each * batch_size : (i + 1) * each * batch_size],
                batch_size,
                each,
                barrier,
                results,
            ),
        )
        for i in range(clients)
    ]
    for process in processes:
        process.start()
    barrier.wait()
    started = time.perf_counter()
    collected = [results.get(timeout=600) for _ in processes]
    wall = time.perf_counter() - started
    for process in processes:
        process.join()
    memories = sum(c["memories"] for c in collected)
    return {
        "clients": clients,
        "batch_size": batch_size,
        "memories": memories,
        "seconds": round(wall, 2),
        "memories_per_s": round(memories / wall, 1),
    }


def setup_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.served setup")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--memories", type=int, required=True)
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--ingest", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    import numpy as np

    from bench import bulk
    from bench.synthetic import Corpus, vocabulary
    from memories.accounts import external_user_create
    from memories.api_keys import api_key_create
    from memories.embedders import get_embedder

    embedder = get_embedder()
    words = vocabulary()
    word_vectors = dict(
        zip(words, np.asarray(embedder.embed(words), dtype=np.float32), strict=True)
    )
    corpus = Corpus(word_vectors)
    queries = corpus.queries(args.queries)
    user = external_user_create(external_id=EXTERNAL_ID)
    _, raw_key = api_key_create(name="bench served", scopes=["read", "write"])
    items, vectors = corpus.memories(args.memories)
    load = bulk.load(user, items, vectors, model=embedder.model_name)
    # Texts for the write timings, keyed apart from the loaded ones.
    ingest, _ = corpus.memories(args.ingest, start=args.memories)
    Path(args.out).write_text(
        json.dumps(
            {
                "key": raw_key,
                "queries": queries,
                "ingest": [(f"ingest-{key}", value) for key, value in ingest],
                "load": load,
                "database": dj.database_info(),
            }
        )
    )


def timer_main(argv: list[str]) -> None:
    """Reads query indices from stdin, one a line; answers {"knn": s, "embed": s} lines."""
    parser = argparse.ArgumentParser(prog="python -m bench.served timer")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--queries", required=True)
    args = parser.parse_args(argv)

    from bench import dj

    dj.setup(args.database_url)
    from django.conf import settings

    from memories.embedders import get_embedder
    from memories.models import Status, User
    from memories.recall.scopes import recall_scopes
    from memories.recall.vector_store import get_vector_store

    queries = json.loads(Path(args.queries).read_text())
    embedder = get_embedder()
    vectors = embedder.embed_queries(queries)
    user = User.objects.get(external_id=EXTERNAL_ID)
    partitions = [scope.partition for scope in recall_scopes(user=user)]
    store = get_vector_store()
    k = settings.RECALL_CANDIDATES
    print("ready", flush=True)
    for line in sys.stdin:
        if line.startswith("exact "):
            print(json.dumps(_exactness(store, vectors, partitions, k, int(line.split()[1]))))
            sys.stdout.flush()
            continue
        index = int(line)
        started = time.perf_counter()
        store.nearest(vector=vectors[index], partitions=partitions, k=k, status=Status.ACTIVE)
        knn = time.perf_counter() - started
        started = time.perf_counter()
        embedder.embed_queries([queries[index]])
        embed = time.perf_counter() - started
        print(json.dumps({"knn": knn, "embed": embed}), flush=True)


def _exactness(store, vectors, partitions, k: int, queries: int) -> dict:
    """The service's nearest k (outside a transaction: SQLite's mirror, PostgreSQL's HNSW
    index) against an exact scan (SQLite: sqlite-vec, which the store asks inside a
    transaction; PostgreSQL: the same statement with index scans off)."""
    from django.db import connection, transaction

    from memories.models import Status

    found = []
    for vector in vectors[:queries]:
        served = store.nearest(vector=vector, partitions=partitions, k=k, status=Status.ACTIVE)
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL enable_indexscan = off")
            exact = store.nearest(vector=vector, partitions=partitions, k=k, status=Status.ACTIVE)
        wanted = {n.memory_id for n in exact}
        found.append(len(wanted & {n.memory_id for n in served}) / max(1, len(wanted)))
    return {
        "queries": len(found),
        "k": k,
        "recall_of_exact": round(sum(found) / len(found), 4),
        "lowest": round(min(found), 4),
        "served_by": "in-process mirror" if connection.vendor == "sqlite" else "HNSW index",
    }


if __name__ == "__main__":
    roles = {"setup": setup_main, "timer": timer_main}
    if sys.argv[1:2] and sys.argv[1] in roles:
        roles[sys.argv[1]](sys.argv[2:])
    else:
        sys.exit("usage: python -m bench.served setup|timer ... (or python -m bench served)")
