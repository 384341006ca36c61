"""The production topology, run for real (docs/operations.md): two gunicorns, two Celery
workers and Celery beat on one PostgreSQL and one Redis, started with the commands
`scripts/serve --production` runs. Forty end users of a product (one API key, X-User-Id)
post conversations and search at once for a bounded time, and one worker is killed with
SIGKILL while an extraction's model call is under way. Then: no answer was an error, no
memory is lost or written twice, every extraction run finished exactly once (the killed
worker's runs by the other worker, through acks_late redelivery), each memory's access count
is the number of search results it appeared in, and beat's scanner ran once per interval.

Only the model provider is replaced (tests/fake_openai.py on 127.0.0.1; tests/topology.py
has the rest of the cast). PostgreSQL only, as the topology is PostgreSQL + Redis: the
suite's server gets a database of its own for this test, and Redis database 5 is emptied
before and after. The figures it measured print with `-s`; docs/operations.md, Production,
quotes them. A failure prints every process's log."""

import json
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from extraction.models import ExtractionRun
from tests.celery_support import redis_url
from tests.topology import (
    FACTS,
    OWN_MEMORIES,
    REPO,
    TURNS,
    ConversationModel,
    EndUser,
    Service,
    Tally,
    free_port,
    get,
    is_ready,
    wait_until,
)

REDIS_URL = redis_url(5)  # broker and cache; a database no other test uses
USERS = 40
LOAD_SECONDS = 20.0
KILL_AFTER_SECONDS = 8.0  # into the load, and after worker a has finished extractions
SCAN_INTERVAL_SECONDS = 4
# Redis hands a dead worker's messages to another after the visibility timeout; that delivery
# may take the dead attempt's run over once the claim time has passed since the attempt
# started, which must come first even when the attempt started late (a busy machine). A run
# queued for longer than the claim time counts as lost: the scanner queues the source again
# (that second run ends skipped, having nothing left to read).
CLAIM_SECONDS = 6
VISIBILITY_SECONDS = 14
SLOW_MODEL_SECONDS = 3.0
STARTUP_SECONDS = 120
# The surviving worker drains the rest at its own pace (each extraction holds a slot for the
# slow model's seconds): a run lost for good never drains, however long this is, and a
# loaded machine (a CI run beside a benchmark's index build) took more than 60 s.
DRAIN_SECONDS = 180
RUNS_TABLE = ExtractionRun._meta.db_table
EXTRACT_TASK = "extraction.tasks.extract_topic_task"
SCAN_TASK = "extraction.tasks.scan_extractions_task"

pytestmark = [
    pytest.mark.topology,
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="the production topology is PostgreSQL + Redis (./scripts/test runs it in its "
        "PostgreSQL pass)",
    ),
]


@dataclass
class Topology:
    database_url: str
    api_key: str
    metrics_token: str
    ports: list[int]
    web: list[Service]
    workers: list[Service]
    beat: Service
    setup_seconds: float


@pytest.fixture
def database():
    """A database of its own on the suite's PostgreSQL server, dropped afterwards."""
    suite_url = os.environ["DATABASE_URL"]
    name = f"topology_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(suite_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(suite_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(suite_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def shared_redis():
    """Redis database 5, empty before and after: no message or throttle count survives."""
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()  # fails loudly (not a skip) when Redis is down: scripts/test starts it
    yield
    client.flushdb()
    client.close()


@pytest.fixture
def model():
    stand_in = ConversationModel(slow_seconds=SLOW_MODEL_SECONDS)
    stand_in.server.start()
    yield stand_in
    stand_in.server.stop()


def service_environment(*, database_url: str, model_url: str, metrics_dir: Path, token: str):
    """The production environment of docs/operations.md with the test's own database,
    Redis database, model and timings; nothing the suite's own settings set."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(
            ("CELERY_", "DATABASE_", "LLM_", "EXTRACTION_", "EMBEDD", "PROMETHEUS_", "METRICS_")
        )
        and name not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "CACHE_URL", "LOG_FORMAT")
    }
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": REDIS_URL,
        "CACHE_URL": REDIS_URL,
        "CELERY_VISIBILITY_TIMEOUT_SECONDS": str(VISIBILITY_SECONDS),
        "EXTRACTION_CLAIM_SECONDS": str(CLAIM_SECONDS),
        "EXTRACTION_SCAN_INTERVAL_SECONDS": str(SCAN_INTERVAL_SECONDS),
        "EXTRACTION_USER_MESSAGES": str(TURNS),
        "EXTRACTION_LLM_BACKOFF_SECONDS": "0.1",
        "LLM_BASE_URL": model_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": "fake-key",
        "LLM_TIMEOUT_SECONDS": "20",
        "EMBEDDER": "local",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "METRICS_TOKEN": token,
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
    }


def manage(env: dict, *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"manage.py {arguments[0]}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture
def topology(database, shared_redis, model, tmp_path):
    started = time.monotonic()
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()  # empty before any process starts (docs/operations.md, Metrics)
    token = secrets.token_urlsafe(16)
    env = service_environment(
        database_url=database,
        model_url=model.server.base_url,
        metrics_dir=metrics_dir,
        token=token,
    )
    # What scripts/serve --production runs first (but collectstatic: whitenoise also serves
    # the apps' own static directories, which the test checks), and the product's key.
    manage(env, "migrate", "--noinput")
    manage(env, "export_embedder")
    api_key = manage(env, "create_api_key", "topology", "--scopes", "read,write").strip()

    python = sys.executable
    services: list[Service] = []
    try:
        ports = [free_port(), free_port()]
        for n, port in enumerate(ports):
            command = [python, "-m", "gunicorn", "-c", "config/gunicorn.conf.py"]
            command += ["--bind", f"127.0.0.1:{port}", "--workers", "1"]
            services.append(Service(f"gunicorn-{n}", command, env, tmp_path))
        celery_worker = [python, "-m", "celery", "-A", "config", "worker"]
        for name in ("a", "b"):
            command = [*celery_worker, "-Q", "celery", "-n", f"topology-{name}@%h"]
            command += ["--concurrency", "2"]
            services.append(Service(f"worker-{name}", command, env, tmp_path))
        # The webhook deliveries' worker, as scripts/serve --production runs it (no endpoint
        # is registered here: it has nothing to do but start).
        command = [*celery_worker, "-Q", "webhooks", "-n", "topology-webhooks@%h"]
        command += ["--pool", "threads", "--concurrency", "4"]
        services.append(Service("worker-webhooks", command, env, tmp_path))
        command = [python, "-m", "celery", "-A", "config", "beat", "-s", str(tmp_path / "beat")]
        services.append(Service("beat", command, env, tmp_path))
        web, workers, beat = services[:2], services[2:4], services[5]
        wait_until(
            lambda: (
                all(is_ready(port) for port in ports)
                and all(" ready." in worker.log() for worker in services[2:5])
                and "beat: Starting..." in beat.log()
            ),
            what="gunicorn's /readyz to answer 200, the workers to be ready and beat to start",
            timeout=STARTUP_SECONDS,
            alive=services,
        )
        yield Topology(
            database_url=database,
            api_key=api_key,
            metrics_token=token,
            ports=ports,
            web=web,
            workers=workers,
            beat=beat,
            setup_seconds=time.monotonic() - started,
        )
    finally:
        for service in reversed(services):
            service.stop()
        # Shown when the test fails (pytest prints a failing test's output).
        for service in services:
            print(f"\n----- {service.name} (last 150 lines of {service.log_path}) -----")
            print("\n".join(service.log().splitlines()[-150:]))


def runs(db) -> list[dict]:
    names = ("task_id", "status", "reason", "source_id", "created", "waited", "took")
    rows = db.execute(
        "SELECT task_id, status, reason, source_id::text, created, "
        "EXTRACT(EPOCH FROM started_at - created_at), EXTRACT(EPOCH FROM finished_at - started_at) "
        f"FROM {RUNS_TABLE} ORDER BY created_at"
    ).fetchall()
    return [dict(zip(names, row, strict=True)) for row in rows]


def extraction_under_way(worker: Service, model: ConversationModel, users, db) -> str | None:
    """A task the worker holds whose run is running and whose model call is under way."""
    taken = worker.unfinished_tasks()
    refs = model.refs_in_flight()
    topics = [
        uuid.UUID(conversation.topic_id)
        for user in users
        for conversation in list(user.conversations)
        if (conversation.user, conversation.number) in refs
    ]
    if not taken or not topics:
        return None
    row = db.execute(
        f"SELECT task_id FROM {RUNS_TABLE} WHERE status = 'running' AND task_id = ANY(%s) "
        "AND source_id = ANY(%s) LIMIT 1",
        [list(taken), topics],
    ).fetchone()
    return row[0] if row else None


def scraped(topology: Topology) -> dict[tuple[str, tuple], float]:
    """GET /metrics of one web process: every process's figures added up (multiprocess)."""
    status, body, _ = get(
        topology.ports[0], "/metrics", {"Authorization": f"Bearer {topology.metrics_token}"}
    )
    assert status == 200, body[:300]
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def test_forty_users_on_two_web_processes_and_two_workers_lose_nothing_when_a_worker_is_killed(
    topology, model
):
    worker_a, worker_b = topology.workers
    tally = Tally()
    users = [
        EndUser(n, api_key=topology.api_key, ports=topology.ports, tally=tally)
        for n in range(USERS)
    ]
    db = psycopg.connect(topology.database_url, autocommit=True)

    # Static files come from whitenoise in the gunicorn processes.
    for port in topology.ports:
        status, _, headers = get(port, "/static/admin/css/base.css")
        assert (status, headers.get("Content-Type", "").split(";")[0]) == (200, "text/css")

    # 1. Load: every user has conversations and searches for LOAD_SECONDS. Once worker a has
    #    finished extractions of its own, the model slows down a few requests at a time until
    #    one is worker a's, and worker a is killed in the middle of it (the load goes on, up
    #    to a limit, until that has happened).
    stop = threading.Event()
    threads = [threading.Thread(target=user.run, args=(stop,)) for user in users]
    load_started = time.monotonic()
    for thread in threads:
        thread.start()
    killed_task, killed_at, killed_wall_clock, killed_tasks = None, None, None, set()
    slowed_at = None
    while not stop.is_set():
        now = time.monotonic()
        if (
            killed_task is None
            and now > load_started + KILL_AFTER_SECONDS
            and len(worker_a.succeeded(EXTRACT_TASK)) >= 2
        ):
            if slowed_at is None or now > slowed_at + SLOW_MODEL_SECONDS:
                model.slow_down(4)
                slowed_at = now
            killed_task = extraction_under_way(worker_a, model, users, db)
            if killed_task is not None:
                worker_a.kill()
                killed_at = time.monotonic()
                killed_wall_clock = datetime.now(UTC)
                killed_tasks = worker_a.unfinished_tasks()
        elapsed = time.monotonic() - load_started
        if (elapsed > LOAD_SECONDS and killed_task) or elapsed > LOAD_SECONDS + 30:
            stop.set()
        if not any(thread.is_alive() for thread in threads):
            break  # every user failed: the errors are asserted below
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join()
    load_seconds = time.monotonic() - load_started
    for user in users:
        user.close()
    assert not tally.errors, "\n".join(tally.errors[:20])
    assert killed_task is not None, "no extraction was under way on worker a during the load"
    assert killed_task in killed_tasks
    conversations = [c for user in users for c in user.conversations]
    complete = [c for c in conversations if c.is_complete]
    assert len(complete) >= USERS, f"only {len(complete)} conversations were completed"

    # 2. Drain: the other worker runs the killed worker's tasks once Redis redelivers them.
    def drained() -> bool:
        statuses = Counter(run["status"] for run in runs(db))
        return (
            statuses["queued"] + statuses["running"] == 0
            and statuses["done"] >= len(complete)
            and killed_tasks <= set(worker_b.ended_tasks())
        )

    alive = [*topology.web, worker_b, topology.beat]
    wait_until(drained, what="every extraction run to finish", timeout=DRAIN_SECONDS, alive=alive)
    # Beat stops; every scan it sent ends on a worker.
    topology.beat.stop()
    sends = topology.beat.beat_sends("scan-extractions")
    wait_until(
        lambda: sum(len(w.succeeded(SCAN_TASK)) for w in topology.workers) >= len(sends),
        what="the workers to run every scan beat sent",
        timeout=DRAIN_SECONDS,
        alive=[*topology.web, worker_b],
    )
    total_seconds = time.monotonic() - load_started + topology.setup_seconds

    # No answer was an error (a user's thread also stops at its first answer that is not 2xx).
    assert all(200 <= status < 300 for (_, status) in tally.statuses), tally.statuses

    # Every run finished, exactly once: one done run per completed conversation, with its
    # one memory. Another run of the same source (the scanner queueing it again while a run
    # waited longer than the claim time, for the queue or for redelivery) ends skipped and
    # writes nothing.
    all_runs = runs(db)
    statuses = Counter(run["status"] for run in all_runs)
    assert set(statuses) <= {"done", "skipped"}, [
        run for run in all_runs if run["status"] not in ("done", "skipped")
    ]
    assert Counter(r["source_id"] for r in all_runs if r["status"] == "done") == Counter(
        c.topic_id for c in complete
    )
    assert {r["created"] for r in all_runs if r["status"] == "done"} == {1}
    assert {r["created"] for r in all_runs if r["status"] == "skipped"} <= {0}
    by_task = {run["task_id"]: run for run in all_runs}
    assert all(len(c.task_ids) == 1 and c.task_ids[0] in by_task for c in complete)
    assert all(not c.task_ids for c in conversations if not c.is_complete)
    # The killed worker's tasks were delivered again and ended on the other worker, once.
    ended_on_b = worker_b.ended_tasks()
    assert all(ended_on_b[task] == 1 for task in killed_tasks), (killed_tasks, ended_on_b)
    assert by_task[killed_task]["status"] in ("done", "skipped")

    # No memory lost or written twice: each user's own memories, once, with access counts
    # equal to the search results they appeared in; and one pending memory per completed
    # conversation, the fact it was about.
    searches = len(tally.search_seconds)
    for user in users:
        active = user.listed("active")
        assert len(active) == len(OWN_MEMORIES)
        assert {m["id"]: (m["key"], m["value"]) for m in active} == user.own_memories
        assert {m["id"]: m["access_count"] for m in active} == {
            memory_id: tally.hits[memory_id] for memory_id in user.own_memories
        }, user.external_id
        proposed = sorted((m["key"], m["value"]) for m in user.listed("pending_review"))
        expected = sorted(FACTS[c.number] for c in user.conversations if c.is_complete)
        assert proposed == expected, user.external_id
        user.close()
    assert sum(tally.hits.values()) >= searches  # the searches found what they asked about

    # Beat sent the scan once per interval, with two workers up and then one, and each scan
    # ran on exactly one worker.
    gaps = [(b - a).total_seconds() for a, b in zip(sends, sends[1:], strict=False)]
    assert len(sends) >= 4, sends
    assert all(-0.5 < gap - SCAN_INTERVAL_SECONDS < 1.5 for gap in gaps), gaps
    scans = worker_a.succeeded(SCAN_TASK) + worker_b.succeeded(SCAN_TASK)
    assert len(scans) == len(sends) and set(scans.values()) == {1}, (len(sends), scans)

    # /metrics adds up every process's figures, the killed worker's too (they stay in the
    # metrics directory): each move to done, and each scan, was counted by the process that
    # made it. (A worker killed between counting and acknowledging has counted one that the
    # other worker counts again: at most one per task it held.)
    metrics = scraped(topology)
    done_counted = metrics[("memory_extraction_runs_total", (("status", "done"),))]
    assert len(complete) <= done_counted <= len(complete) + len(killed_tasks)
    scan_outcome = (("outcome", "success"), ("task", SCAN_TASK))
    scans_counted = metrics[("memory_celery_tasks_total", scan_outcome)]
    assert len(sends) <= scans_counted <= len(sends) + len(killed_tasks)
    db.close()

    requests = sum(tally.statuses.values())
    waited = [run["waited"] for run in all_runs if run["status"] == "done"]
    search_ms = sorted(1000 * seconds for seconds in tally.search_seconds)
    figures = {
        "users": USERS,
        "load_seconds": round(load_seconds, 1),
        "requests": requests,
        "requests_per_second": round(requests / load_seconds, 1),
        "searches": searches,
        "searches_per_second": round(searches / load_seconds, 1),
        "search_ms_p50": round(statistics.median(search_ms), 1),
        "search_ms_p95": round(search_ms[int(0.95 * (len(search_ms) - 1))], 1),
        "conversations_completed": len(complete),
        "extraction_runs": dict(statuses),
        "run_queued_seconds_p50_max": [
            round(float(statistics.median(waited)), 2),
            round(float(max(waited)), 2),
        ],
        "model_calls": sum(model.calls.values()),
        "killed_after_seconds": round(killed_at - load_started, 1),
        "killed_worker_tasks": len(killed_tasks),
        "killed_tasks_ended_after_seconds": round(
            max(
                (worker_b.ended_at(task) - killed_wall_clock).total_seconds()
                for task in killed_tasks
            ),
            1,
        ),
        "scans": len(sends),
        "setup_seconds": round(topology.setup_seconds, 1),
        "total_seconds": round(total_seconds, 1),
    }
    print(f"\ntopology figures: {json.dumps(figures)}")
