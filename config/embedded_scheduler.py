"""The embedded scheduler: without a broker, Celery beat's schedule (CELERY_BEAT_SCHEDULE: the
extraction scan, consolidation, unfinished erasures) run by a thread of a serving process,
which puts each entry on that process's embedded worker (config.embedded_worker) when due.

gunicorn may run several serving processes of one checkout and database: the one holding an
exclusive lock on their file under var/ (config.embedded.scheduler_lock_path) schedules, the
others try again now and then (and take over when its process ends: the system drops a dead
process's lock). An entry is not queued again while its last run is still queued or running,
so there is one scan at a time."""

import fcntl
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger(__name__)

# How often a process without the lock tries to take it.
LOCK_RETRY_SECONDS = 10.0

# submit(task_name, args, kwargs, on_done): queue the task; call on_done() once it has ended.
Submit = Callable[[str, tuple, dict, Callable[[], None]], None]


def interval_seconds(schedule: Any) -> float | None:
    """The entry's interval in seconds: a number, a timedelta or Celery's `schedule` (what
    the settings use); None for anything else (a crontab), which this scheduler does not run."""
    if isinstance(schedule, bool):
        return None
    if isinstance(schedule, int | float):
        return float(schedule)
    if isinstance(schedule, timedelta):
        return schedule.total_seconds()
    run_every = getattr(schedule, "run_every", None)
    return run_every.total_seconds() if isinstance(run_every, timedelta) else None


@dataclass
class Entry:
    name: str
    task: str
    interval: float
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    next_at: float = 0.0
    # Set while its last run is queued or running on the worker; cleared by the worker.
    pending: threading.Event = field(default_factory=threading.Event)


class EmbeddedScheduler:
    def __init__(
        self,
        schedule: dict[str, dict],
        *,
        submit: Submit,
        lock_path: Path,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.submit = submit
        self.lock_path = lock_path
        self.clock = clock
        self.entries: list[Entry] = []
        self._lock_file: IO | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="embedded-scheduler", daemon=True)
        started = clock()
        for name, spec in schedule.items():
            interval = interval_seconds(spec["schedule"])
            if interval is None or interval <= 0:
                logger.warning(
                    "embedded scheduler: %s is not a fixed interval; run it with Celery beat",
                    name,
                )
                continue
            self.entries.append(
                Entry(
                    name=name,
                    task=spec["task"],
                    interval=interval,
                    args=tuple(spec.get("args", ())),
                    kwargs=dict(spec.get("kwargs", {})),
                    # As Celery beat: the first run one interval after the start.
                    next_at=started + interval,
                )
            )

    @property
    def holds_lock(self) -> bool:
        return self._lock_file is not None

    def lock_take(self) -> bool:
        """Take the lock if no other process holds it; True when this one holds it."""
        if self._lock_file is not None:
            return True
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = open(self.lock_path, "a")  # noqa: SIM115 (held open while scheduling)
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.close()
            return False
        self._lock_file = lock_file
        return True

    def tick(self) -> float:
        """Queue the entries that are due (and not still pending); the seconds until the
        next one is. Call only while holding the lock."""
        now = self.clock()
        for entry in self.entries:
            if entry.next_at > now:
                continue
            entry.next_at = now + entry.interval
            if entry.pending.is_set():
                logger.info("embedded scheduler: %s still running, skipped this time", entry.name)
                continue
            entry.pending.set()
            # DEBUG: the webhook sweep is due every few seconds; what a task does is logged.
            logger.debug("embedded scheduler: sending due task %s (%s)", entry.name, entry.task)
            try:
                self.submit(entry.task, entry.args, entry.kwargs, entry.pending.clear)
            except Exception:
                entry.pending.clear()
                logger.exception("embedded scheduler: could not queue %s", entry.name)
        if not self.entries:
            return LOCK_RETRY_SECONDS
        return max(0.0, min(entry.next_at for entry in self.entries) - self.clock())

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._lock_file is not None:
            self._lock_file.close()  # releases the lock
            self._lock_file = None

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.lock_take():
                wait = self.tick()
            else:
                wait = LOCK_RETRY_SECONDS
            self._stop.wait(wait)
