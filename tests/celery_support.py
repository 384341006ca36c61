"""A real Celery worker for tests: a subprocess on the test database and a Redis queue of its
own, and the Celery app that sends to that queue (tests/extraction/test_celery_worker.py,
tests/memories/test_consolidation_worker.py).

Nothing here is skipped: without Redis on 127.0.0.1:6379 the tests that use it fail."""

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlencode

import redis
from celery import Celery
from celery import _state as celery_state
from django.conf import settings
from django.db import connection


def redis_url(database: int) -> str:
    """Redis database `database` (0-7) of the SQLite pass; the PostgreSQL pass, which
    scripts/test runs beside it, has the one 8 higher, so neither empties or drains the other's
    queues. Each test module that uses Redis takes a number no other module uses."""
    assert 0 <= database < 8, database
    on_postgresql = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    return f"redis://127.0.0.1:6379/{database + 8 if on_postgresql else database}"


BROKER_URL = redis_url(7)  # the worker's queue
BASE_DIR = Path(settings.BASE_DIR)
STARTUP_SECONDS = 60
TASK_SECONDS = 60


def worker_database_url() -> str:
    """The test database (not the configured one) as a DATABASE_URL for the worker."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"  # NAME is absolute: sqlite:////path/to/file
    assert connection.vendor == "postgresql", connection.vendor
    netloc = f"{quote(db['USER'] or '', safe='')}:{quote(db['PASSWORD'] or '', safe='')}@"
    netloc += db["HOST"] or ""
    if db["PORT"]:
        netloc += f":{db['PORT']}"
    socket_dir = (db.get("OPTIONS") or {}).get("host")
    query = f"?{urlencode({'host': socket_dir})}" if socket_dir else ""
    return f"postgresql://{netloc}/{quote(db['NAME'])}{query}"


class Worker:
    """`celery worker` as a subprocess, its log in a file."""

    def __init__(
        self, *, queue: str, log_path: Path, llm_base_url: str, settings: dict | None = None
    ):
        self.queue = queue
        self.settings = settings or {}
        self.hostname = f"{queue}@localhost"
        self.log_path = log_path
        self.llm_base_url = llm_base_url
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("CELERY_", "DATABASE_", "LLM_", "EXTRACTION_", "EMBEDD"))
        }
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            SECRET_KEY="x",
            PYTHONPATH=str(BASE_DIR),
            CELERY_BROKER_URL=BROKER_URL,
            DATABASE_URL=worker_database_url(),
            LLM_BASE_URL=self.llm_base_url,
            LLM_MODEL="fake-model",
            LLM_API_KEY="k",
            LLM_TIMEOUT_SECONDS="10",
            EXTRACTION_LLM_BACKOFF_SECONDS="0.01",
            EXTRACTION_USER_MESSAGES="6",
            EMBEDDER="local",
            LOG_LEVEL="INFO",
            PYTHONUNBUFFERED="1",
        )
        env.update(self.settings)
        command = [
            str(Path(sys.executable).parent / "celery"),
            "-A",
            "config",
            "worker",
            "--pool=threads",
            "--concurrency=2",
            "-Q",
            self.queue,
            "-n",
            self.hostname,
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=INFO",
        ]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def log(self, since: int = 0) -> str:
        with open(self.log_path, "rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def assert_alive(self) -> None:
        assert self.process is not None and self.process.poll() is None, (
            f"the Celery worker exited with {self.process.returncode}:\n{self.log()}"
        )

    def wait_ready(self, app: Celery) -> None:
        """Until the worker answers a ping through the broker (so it consumes our queue)."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            self.assert_alive()
            if app.control.ping(destination=[self.hostname], timeout=0.5):
                return
            time.sleep(0.2)
        raise AssertionError(f"the Celery worker was not ready in time:\n{self.log()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # warm shutdown: finishes the task at hand
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def wait_for(condition, *, worker: Worker, what: str, timeout: float = TASK_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        worker.assert_alive()
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@contextmanager
def broker_app(name: str, queue_name: str) -> Iterator[Celery]:
    """A Celery app that sends to Redis and `queue_name`, made current meanwhile, so the
    tasks the services queue go to the broker instead of running in-process. The queue's
    keys are deleted afterwards."""
    redis.Redis.from_url(BROKER_URL).ping()  # fails loudly (not a skip) when Redis is down
    app = Celery(name, set_as_current=False)
    app.conf.update(
        broker_url=BROKER_URL,
        task_default_queue=queue_name,
        task_always_eager=False,
        task_ignore_result=True,
    )
    previous = celery_state.get_current_app()
    app.set_current()
    try:
        yield app
    finally:
        previous.set_current()
        app.close()
        client = redis.Redis.from_url(BROKER_URL)
        for key in client.scan_iter(match=f"*{queue_name}*"):  # the queue and its bindings
            client.delete(key)
        client.close()


@contextmanager
def running_worker(broker_app: Celery, *, print_log: bool = True, **arguments) -> Iterator[Worker]:
    """A Worker(**arguments) started and answering `broker_app`'s ping; stopped afterwards,
    its log printed (shown when a test of the module failed)."""
    worker = Worker(**arguments)
    try:
        worker.start()
        worker.wait_ready(broker_app)
        yield worker
    finally:
        worker.stop()
        if print_log:
            print(f"--- Celery worker log ---\n{worker.log()}")
