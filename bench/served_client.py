"""The load client of `python -m bench served` (bench/served.py): timed requests to the
gunicorn it started, over keep-alive connections as a product holds them; searches one at a
time and from several client processes at once, single and batched creates."""

import http.client
import json
import multiprocessing
import time
from urllib.parse import urlencode

from bench.cpu import CpuMeter
from bench.served_server import Timer
from bench.served_tables import OUTSIDE_STAGES, SEARCH_STAGES

WARM_UP = 10
TOP_K = 10


def request(connection, method: str, path: str, headers: dict, body=None, expect=200):
    return exchange(connection, method, path, headers, body, expect)[0]


def exchange(connection, method: str, path: str, headers: dict, body=None, expect=200):
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


def search_path(query: str, **params) -> str:
    return "/api/memories/search?" + urlencode({"q": query, "top_k": TOP_K, **params})


def timed_searches(
    port: int, headers: dict, queries: list[str], timer: Timer, *, memory_filter=None
) -> dict:
    """With memory_filter, each search sends it (`filter=`), and the result counts are
    kept: how many came back, and how many with min_relevance=0 (the gate aside), which
    should be TOP_K whenever the filter matches that many."""
    from bench.metrics import latency_summary

    extra = {} if memory_filter is None else {"filter": json.dumps(memory_filter)}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    n = len(queries)
    for j in range(min(WARM_UP, n)):
        request(connection, "GET", search_path(queries[j], **extra), headers)
        timer.time(j)
    http_seconds, knn_seconds, embed_seconds, stages = [], [], [], []
    returned = []
    for j in range(n):
        started = time.perf_counter()
        data, timings = exchange(connection, "GET", search_path(queries[j], **extra), headers)
        http_seconds.append(time.perf_counter() - started)
        returned.append(len(json.loads(data)["data"]))
        stages.append(timings)
        timed = timer.time((j + n // 2) % n)
        knn_seconds.append(timed["knn"])
        embed_seconds.append(timed["embed"])
    ungated = []
    if memory_filter is not None:
        for query in queries[:WARM_UP * 2]:
            path = search_path(query, min_relevance=0, **extra)
            ungated.append(len(json.loads(request(connection, "GET", path, headers))["data"]))
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
    if memory_filter is not None:
        out["filter"] = memory_filter
        out["returned_mean"] = round(sum(returned) / max(1, len(returned)), 2)
        out["ungated_returned"] = {"searches": len(ungated), "min": min(ungated, default=0)}
    return out


def timed_contexts(port: int, headers: dict, queries: list[str]) -> dict:
    """POST /api/memories/context for each query, one at a time over one keep-alive
    connection, as a product asks for the hint of each model turn: latency and the mean of
    its Server-Timing stages."""
    from bench.metrics import latency_summary

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    path = "/api/memories/context"
    for query in queries[:WARM_UP]:
        request(connection, "POST", path, headers, {"query": query})
    seconds, stages = [], []
    for query in queries:
        started = time.perf_counter()
        _, timings = exchange(connection, "POST", path, headers, {"query": query})
        seconds.append(time.perf_counter() - started)
        stages.append(timings)
    connection.close()
    summary = latency_summary(seconds)
    summary.update(_stage_means(stages, [name for name, _ in SEARCH_STAGES]))
    return summary


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


def _search_client(port, headers, queries, users, offset, seconds, barrier, results) -> None:
    def search(connection, i: int) -> None:
        user = {"X-User-Id": users[i % len(users)]} if users else {}
        request(connection, "GET", search_path(queries[i % len(queries)]), {**headers, **user})

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    search(connection, offset)
    barrier.wait()
    deadline = time.perf_counter() + seconds
    latencies, errors, i = [], 0, offset
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        try:
            search(connection, i)
            latencies.append(time.perf_counter() - started)
        except (RuntimeError, OSError):
            errors += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i += 1
    results.put((latencies, errors))


def concurrent_searches(
    port,
    headers,
    queries,
    clients: int,
    seconds: float,
    users: list[str] | None = None,
    meter: CpuMeter | None = None,
) -> dict:
    """clients processes, each on its own keep-alive connection, searching for `seconds`;
    with `users`, each search by the next of them (their X-User-Id); with `meter`, what
    the searches cost the machine's cores over the same window (bench/cpu.py)."""
    from bench.metrics import latency_summary

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(clients + 1)
    results = context.Queue()
    step = max(1, len(users or queries) // clients)
    processes = [
        context.Process(
            target=_search_client,
            args=(port, headers, queries, users, i * step, seconds, barrier, results),
        )
        for i in range(clients)
    ]
    for process in processes:
        process.start()
    barrier.wait()
    before = meter.snapshot() if meter else None
    started = time.perf_counter()
    collected = [results.get(timeout=seconds + 120) for _ in processes]
    wall = time.perf_counter() - started
    after = meter.snapshot() if meter else None
    for process in processes:
        process.join()
    latencies = [s for got, _ in collected for s in got]
    out = {
        "clients": clients,
        "seconds": round(wall, 1),
        "searches": len(latencies),
        "errors": sum(errors for _, errors in collected),
        "searches_per_s": round(len(latencies) / wall, 1),
        "latency": latency_summary(latencies) if latencies else None,
    }
    if meter and before and after:
        out["cpu"] = meter.per_unit(before, after, len(latencies))
    return out


def post_creates(port, headers, items) -> dict:
    from bench.metrics import latency_summary

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    seconds, stages = [], []
    for i, (key, value) in enumerate(items):
        started = time.perf_counter()
        body = {"key": key, "value": value}
        _, timings = exchange(connection, "POST", "/api/memories", headers, body, 201)
        if i >= min(5, len(items) // 5):  # the first few warm up the write path
            seconds.append(time.perf_counter() - started)
            stages.append(timings)
    connection.close()
    summary = latency_summary(seconds)
    summary["creates_per_s"] = round(len(seconds) / sum(seconds), 1)
    # Where a create's time went (Server-Timing): embedding the text, the near-duplicate
    # search of its scope, writing the rows (and on PostgreSQL the partition graph's insert).
    summary.update(_stage_means(stages, ("embedding", "similar", "write", "app")))
    return summary


def _stage_means(stages: list[dict], names) -> dict:
    """{"<stage>_ms_mean": ms} over these answers' Server-Timing stages."""
    return {
        f"{name}_ms_mean": round(sum(t.get(name, 0.0) for t in stages) / len(stages), 1)
        for name in names
    }


def post_batches(
    port, headers, items, batch_size: int, batches: int, meter: CpuMeter | None = None
) -> dict:
    from bench.metrics import latency_summary

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    seconds, stages = [], []
    before = meter.snapshot() if meter else None
    for b in range(batches):
        chunk = items[b * batch_size : (b + 1) * batch_size]
        body = {"memories": [{"key": key, "value": value} for key, value in chunk]}
        started = time.perf_counter()
        _, timings = exchange(connection, "POST", "/api/memories/batch", headers, body, 201)
        seconds.append(time.perf_counter() - started)
        stages.append(timings)
    after = meter.snapshot() if meter else None
    connection.close()
    # Where a batch's time went (Server-Timing): embedding the texts, writing the rows.
    split = _stage_means(stages, ("embedding", "write", "app"))
    out = {
        **split,
        "batch_size": batch_size,
        "batches": batches,
        "memories": batch_size * batches,
        "seconds": round(sum(seconds), 2),
        "memories_per_s": round(batch_size * batches / sum(seconds), 1),
        "per_batch": latency_summary(seconds),
    }
    if meter and before and after:
        out["cpu"] = meter.per_unit(before, after, batch_size * batches)
    return out


def _batch_client(port, headers, items, batch_size, batches, barrier, results) -> None:
    barrier.wait()
    results.put(post_batches(port, headers, items, batch_size, batches))


def concurrent_batches(
    port,
    headers,
    items,
    batch_size: int,
    batches: int,
    clients: int,
    meter: CpuMeter | None = None,
):
    """`batches` batches split over `clients` client processes posting at once; with
    `meter`, what they cost the machine's cores over the same window (bench/cpu.py)."""
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
    before = meter.snapshot() if meter else None
    started = time.perf_counter()
    collected = [results.get(timeout=600) for _ in processes]
    wall = time.perf_counter() - started
    after = meter.snapshot() if meter else None
    for process in processes:
        process.join()
    memories = sum(c["memories"] for c in collected)
    out = {
        "clients": clients,
        "batch_size": batch_size,
        "memories": memories,
        "seconds": round(wall, 2),
        "memories_per_s": round(memories / wall, 1),
    }
    if meter and before and after:
        out["cpu"] = meter.per_unit(before, after, memories)
    return out
