"""The service's Prometheus metrics, and the text GET /metrics answers.

Each process counts its own figures. With several processes (gunicorn workers, Celery
workers) set PROMETHEUS_MULTIPROC_DIR to one directory for all of them on the machine,
emptied before they start: prometheus-client's multiprocess mode then writes each process's
figures there and /metrics adds them up. prometheus-client reads the variable when it is
first imported, so it must be in the environment (or .env) of every process from the start.

Imports nothing of the apps: memories and extraction record into it."""

import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from ops import timing

REQUESTS = Counter(
    "memory_http_requests",
    "HTTP requests answered, by URL pattern, method and status.",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "memory_http_request_duration_seconds",
    "Time to answer an HTTP request (a streamed body: to its first byte), by URL pattern.",
    ["route", "method"],
)
RECALL_STAGES = ("embedding", "filter", "keyword", "candidates", "scoring", "access_write")
RECALL_STAGE_SECONDS = Histogram(
    "memory_recall_stage_duration_seconds",
    "Time recall spends per stage: embedding the query, finding what a filter matches, the "
    "keyword search, the nearest neighbours and candidate rows, scoring, writing the access "
    "counts.",
    ["stage"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
for _stage in RECALL_STAGES:
    RECALL_STAGE_SECONDS.labels(_stage)  # every stage shows from the first scrape
EXTRACTION_RUNS = Counter(
    "memory_extraction_runs",
    "Extraction runs that moved to a status (queued, running, done, skipped, failed).",
    ["status"],
)
MODEL_SECONDS = Histogram(
    "memory_extraction_model_request_duration_seconds",
    "Calls to the utility model, by outcome: ok, or the error's type.",
    ["outcome"],
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0),
)
LOGIN_LOCKOUTS = Counter(
    "memory_login_lockouts",
    "Logins locked out, by whether the username is a staff account's (true, false).",
    ["staff"],
)
CELERY_TASKS = Counter(
    "memory_celery_tasks",
    "Celery tasks that ended, by task and outcome (success, failure, retry, ...).",
    ["task", "outcome"],
)


def observe_request(*, route: str, method: str, status: int, seconds: float) -> None:
    REQUESTS.labels(route, method, str(status)).inc()
    REQUEST_SECONDS.labels(route, method).observe(seconds)


def observe_recall_stage(stage: str, seconds: float) -> None:
    """Record how long one stage of one recall took. Raises ValueError for a stage not in
    RECALL_STAGES (labels must stay a fixed set)."""
    if stage not in RECALL_STAGES:
        raise ValueError(f"unknown recall stage {stage!r}: expected one of {RECALL_STAGES}")
    RECALL_STAGE_SECONDS.labels(stage).observe(seconds)


@contextmanager
def recall_stage(stage: str) -> Iterator[None]:
    """`with recall_stage("scoring"): ...` times the block with observe_recall_stage, and as
    a stage of the request being answered (ops.timing)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - started
        observe_recall_stage(stage, seconds)
        timing.record(stage, seconds)


def count_extraction_run(status: str) -> None:
    EXTRACTION_RUNS.labels(status).inc()


def observe_model_call(*, outcome: str, seconds: float) -> None:
    MODEL_SECONDS.labels(outcome).observe(seconds)


def count_task(*, task: str, outcome: str) -> None:
    CELERY_TASKS.labels(task, outcome).inc()


# Collectors other apps add (AppConfig.ready), which compute their values when Prometheus
# scrapes: ops knows nothing of what they count (memories registers the review queue's).
SCRAPE_COLLECTORS: list = []


def register_scrape_collector(collector) -> None:
    SCRAPE_COLLECTORS.append(collector)


def exposition(*collectors) -> bytes:
    """The Prometheus text format of every metric: this process's, or in multiprocess mode
    all processes' added up; then those of `collectors`, which compute theirs now."""
    if settings.PROMETHEUS_MULTIPROC_DIR:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
    else:
        registry = REGISTRY
    return b"".join([generate_latest(registry), *(generate_latest(c) for c in collectors)])
