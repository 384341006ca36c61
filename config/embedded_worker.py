"""The embedded worker: without a broker (no CELERY_BROKER_URL), a serving process runs the
tasks it sends on a thread of its own, one at a time, instead of inside the request that sent
them, and one serving process on the machine also runs the beat schedule
(config.embedded_scheduler). Started by config/wsgi.py only; management commands and the
test suite keep running tasks inline (CELERY_TASK_ALWAYS_EAGER), as before.

A task is run with its eager apply(), so retries, autoretry and the task's own failure
handling behave as in process. Like a broker's worker, the thread sees only committed rows:
a task sent inside a transaction is queued when it commits."""

import atexit
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from celery import Task
from celery.utils import uuid
from django.db import connections, transaction

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    task: Task
    args: tuple
    kwargs: dict
    task_id: str
    # Called on the worker thread once the task has ended, however it ended.
    on_done: Any = None

    def describe(self) -> str:
        return f"{self.task.name}[{self.task_id}]"


class EmbeddedWorker:
    """A queue and the one thread that runs its jobs in order."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._running: Job | None = None
        self._thread = threading.Thread(target=self._run, name="embedded-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queue a job now: the caller has committed what it needs."""
        self._jobs.put(job)

    def submit_on_commit(self, job: Job) -> None:
        """Queue a job once the caller's transaction commits (at once outside one)."""
        transaction.on_commit(lambda: self._jobs.put(job))

    def stop(self, timeout: float | None = None) -> None:
        """Let the thread end after the jobs queued before this; wait up to `timeout`."""
        self._jobs.put(None)
        self._thread.join(timeout)

    def unfinished(self) -> tuple[Job | None, list[Job]]:
        """The job running now, if any, and those still queued."""
        with self._jobs.mutex:
            queued = [job for job in self._jobs.queue if job is not None]
        return self._running, queued

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._running = job
            try:
                self._run_job(job)
            finally:
                self._running = None

    def _run_job(self, job: Job) -> None:
        # Celery logs a task that succeeded ("Task ...[id] succeeded in ..."), not one that
        # raised in an eager apply: that is logged here.
        try:
            job.task.apply(args=job.args, kwargs=job.kwargs, task_id=job.task_id)
        except Exception:
            # The task recorded its own failure where it has one (an extraction run's
            # `error`); this thread goes on with the next job.
            logger.exception("embedded worker: task %s raised", job.describe())
        finally:
            # The thread lives as long as the process: a connection kept between tasks could
            # be dropped by the database meanwhile, and SQLite's would hold its file open.
            connections.close_all()
            if job.on_done is not None:
                job.on_done()


_worker: EmbeddedWorker | None = None


def embedded_worker() -> EmbeddedWorker | None:
    """The started worker of this process, or None (tasks run inline or go to a broker)."""
    return _worker


def worker_start() -> EmbeddedWorker:
    """Start this process's worker (once): tasks sent from now on run on it."""
    global _worker
    if _worker is None:
        worker = EmbeddedWorker()
        worker.start()
        _worker = worker
        atexit.register(_log_unfinished, worker)
    return _worker


def _log_unfinished(worker: EmbeddedWorker) -> None:
    """At exit: say which tasks did not run to their end. Their extraction runs stay queued
    or running until the claim time (EXTRACTION_CLAIM_SECONDS) has passed; the scanner then
    queues their conversations again."""
    running, queued = worker.unfinished()
    for job, state in [(running, "running")] + [(job, "still queued") for job in queued]:
        if job is not None:
            logger.warning(
                "embedded worker stopped with task %s %s: periodic work runs again at its "
                "next interval, and a later scan queues an unfinished extraction again",
                job.describe(),
                state,
            )


class EmbeddedTask(Task):
    """The app's task class (config/celery.py): sent with delay/apply_async while the
    embedded worker runs, a task goes to it instead of running in the caller."""

    def apply_async(self, args=None, kwargs=None, task_id=None, producer=None, **options):
        worker = _worker
        if worker is None or not self._get_app().conf.task_always_eager:
            return super().apply_async(args, kwargs, task_id, producer, **options)
        task_id = task_id or uuid()
        worker.submit_on_commit(Job(self, tuple(args or ()), dict(kwargs or {}), task_id))
        return self.AsyncResult(task_id)
