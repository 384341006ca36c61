"""The embedded worker: without a broker (no CELERY_BROKER_URL), a serving process runs the
tasks it sends on threads of its own instead of inside the request that sent them, and one
serving process on the machine also runs the beat schedule (config.embedded_scheduler).
Started by config/wsgi.py only; management commands and the test suite keep running tasks
inline (CELERY_TASK_ALWAYS_EAGER), as before.

As a broker's workers do, each Celery queue a task is routed to (CELERY_TASK_ROUTES) has
workers of its own: the default queue one thread, which runs extraction and the periodic work
in order; the webhook queue (WEBHOOK_QUEUE) WEBHOOK_CONCURRENCY threads, so that a receiver
answering slowly never holds an extraction, nor one tenant's receiver every delivery.

A task is run with its eager apply(), so retries, autoretry and the task's own failure
handling behave as in process. Like a broker's worker, a thread sees only committed rows:
a task sent inside a transaction is queued when it commits."""

import atexit
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from celery import Task
from celery.utils import uuid
from django.db import connections, transaction

from ops import context

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    task: Task
    args: tuple
    kwargs: dict
    task_id: str
    # Called on the worker thread once the task has ended, however it ended.
    on_done: Any = None
    # Sent by the embedded scheduler: logged only when it had something to do.
    periodic: bool = False

    def describe(self) -> str:
        return f"{self.task.name}[{self.task_id}]"


class EmbeddedWorker:
    """A queue and the threads that run its jobs, in the order they came (one thread: one
    job at a time, in order)."""

    def __init__(self, name: str = "embedded-worker", threads: int = 1) -> None:
        self.name = name
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._running: dict[str, Job] = {}
        self._threads = [
            threading.Thread(
                target=self._run, name=name if threads == 1 else f"{name}-{number}", daemon=True
            )
            for number in range(1, threads + 1)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def submit(self, job: Job) -> None:
        """Queue a job now: the caller has committed what it needs."""
        self._jobs.put(job)

    def submit_on_commit(self, job: Job) -> None:
        """Queue a job once the caller's transaction commits (at once outside one)."""
        transaction.on_commit(lambda: self._jobs.put(job))

    def stop(self, timeout: float | None = None) -> None:
        """Let the threads end after the jobs queued before this; wait up to `timeout`."""
        for _thread in self._threads:
            self._jobs.put(None)
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def unfinished(self) -> tuple[list[Job], list[Job]]:
        """The jobs running now and those still queued."""
        with self._jobs.mutex:
            queued = [job for job in self._jobs.queue if job is not None]
        return list(self._running.values()), queued

    def _run(self) -> None:
        thread_name = threading.current_thread().name
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._running[thread_name] = job
            try:
                self._run_job(job)
            finally:
                del self._running[thread_name]

    def _run_job(self, job: Job) -> None:
        # Celery logs a task that succeeded ("Task ...[id] succeeded in ..."), not one that
        # raised in an eager apply: that is logged here.
        periodic = context.periodic_run.set(job.periodic)
        try:
            job.task.apply(args=job.args, kwargs=job.kwargs, task_id=job.task_id)
        except Exception:
            # The task recorded its own failure where it has one (an extraction run's
            # `error`); this thread goes on with the next job.
            logger.exception("embedded worker: task %s raised", job.describe())
        finally:
            context.periodic_run.reset(periodic)
            # The thread lives as long as the process: a connection kept between tasks could
            # be dropped by the database meanwhile, and SQLite's would hold its file open.
            connections.close_all()
            if job.on_done is not None:
                job.on_done()


# The worker of the default queue, and those of other queues (by queue name).
_worker: EmbeddedWorker | None = None
_queue_workers: dict[str, EmbeddedWorker] = {}


def embedded_worker() -> EmbeddedWorker | None:
    """The started worker of this process's default queue, or None (tasks run inline or go
    to a broker)."""
    return _worker


def queue_of(task_name: str) -> str:
    """The queue Celery's routes (CELERY_TASK_ROUTES) send the task to."""
    from config.celery import app

    return app.amqp.router.route({}, task_name, (), {})["queue"].name


def worker_for(task_name: str) -> EmbeddedWorker | None:
    """The started worker of the task's queue: its own queue's when one was started, else the
    default queue's; None when no worker runs."""
    if _worker is None:
        return None
    return _queue_workers.get(queue_of(task_name), _worker) if _queue_workers else _worker


def worker_start(queues: dict[str, int] | None = None) -> EmbeddedWorker:
    """Start this process's workers (once): the default queue's, and one of `threads` threads
    for each other queue in `queues` (name: threads). Tasks sent from now on run on them."""
    global _worker
    if _worker is None:
        for queue_name, threads in (queues or {}).items():
            queue_worker = EmbeddedWorker(f"embedded-{queue_name}", threads)
            queue_worker.start()
            _queue_workers[queue_name] = queue_worker
            atexit.register(_log_unfinished, queue_worker)
        worker = EmbeddedWorker()
        worker.start()
        _worker = worker
        atexit.register(_log_unfinished, worker)
    return _worker


def _log_unfinished(worker: EmbeddedWorker) -> None:
    """At exit: say which tasks did not run to their end. Their extraction runs stay queued
    or running until the claim time (EXTRACTION_CLAIM_SECONDS) has passed; the scanner then
    queues their conversations again; a delivery is due again once its claim has passed."""
    running, queued = worker.unfinished()
    for job, state in [(job, "running") for job in running] + [
        (job, "still queued") for job in queued
    ]:
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
        worker = worker_for(self.name)
        if worker is None or not self._get_app().conf.task_always_eager:
            return super().apply_async(args, kwargs, task_id, producer, **options)
        task_id = task_id or uuid()
        worker.submit_on_commit(Job(self, tuple(args or ()), dict(kwargs or {}), task_id))
        return self.AsyncResult(task_id)
