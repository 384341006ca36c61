"""What a serving process runs beside its requests when there is no broker: the embedded
worker (config.embedded_worker) and, in one process of the checkout, the embedded scheduler
(config.embedded_scheduler). config/wsgi.py starts them; nothing else does."""

import hashlib
import logging
import signal
import sys
import threading
from pathlib import Path

from celery.utils import uuid
from django.conf import settings

from config.celery import app
from config.embedded_scheduler import EmbeddedScheduler
from config.embedded_worker import Job, embedded_worker, worker_for, worker_start

logger = logging.getLogger(__name__)

_scheduler: EmbeddedScheduler | None = None


def scheduler_lock_path(base_dir: Path, database: dict) -> Path:
    """The lock of the processes serving one database from this checkout (gunicorn's
    workers): one of them schedules. Servers of other databases (a test's server beside a
    dev server) each schedule their own."""
    identity = "|".join(str(database.get(key, "")) for key in ("ENGINE", "NAME", "HOST", "PORT"))
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return Path(base_dir) / "var" / "embedded-scheduler" / f"{digest}.lock"


def embedded_start() -> bool:
    """Start the embedded worker and scheduler unless a broker is configured (its worker and
    beat do this work) or they run already. True when they were started now."""
    global _scheduler
    if settings.CELERY_BROKER_URL or embedded_worker() is not None:
        return False
    # Deliveries on threads of their own (settings.CELERY_TASK_ROUTES), as the production
    # set runs a worker of their own.
    worker_start({settings.WEBHOOK_QUEUE: settings.WEBHOOK_CONCURRENCY})
    _exit_on_sigterm()

    def submit(name: str, args: tuple, kwargs: dict, on_done) -> None:
        worker = worker_for(name)
        assert worker is not None  # started just above
        worker.submit(Job(app.tasks[name], args, kwargs, uuid(), on_done, periodic=True))

    scheduler = EmbeddedScheduler(
        settings.CELERY_BEAT_SCHEDULE,
        submit=submit,
        lock_path=scheduler_lock_path(settings.BASE_DIR, settings.DATABASES["default"]),
    )
    holds_lock = scheduler.lock_take()
    scheduler.start()
    _scheduler = scheduler
    if holds_lock:
        every = ", ".join(f"{entry.name} every {entry.interval:g} s" for entry in scheduler.entries)
        logger.info(
            "embedded worker and scheduler started (no broker: tasks run on a thread of this "
            "process, webhook deliveries on %d of their own): %s",
            settings.WEBHOOK_CONCURRENCY,
            every or "no periodic tasks",
        )
    else:
        logger.info(
            "embedded worker started (no broker: tasks run on a thread of this process, "
            "webhook deliveries on %d of their own); another process of this checkout runs "
            "the schedule (lock %s)",
            settings.WEBHOOK_CONCURRENCY,
            scheduler.lock_path,
        )
    return True


def _exit_on_sigterm() -> None:
    """runserver (`manage.py runserver`, scripts/serve before issue 42) leaves SIGTERM to
    Python's default, which ends the process at once, without the exit handlers that log a
    task the worker did not finish: a SIGTERM exits normally instead. Only where nobody has
    taken the signal (gunicorn's workers have their own graceful stop) and in the main thread
    (the only one that may set a handler)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
