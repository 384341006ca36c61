"""Celery tasks: thin wrappers that load by id and call one service. Idempotent (a delivery
takes its run with a conditional UPDATE, and the service claims its source atomically and
writes once), acknowledged late (a worker that dies mid-task leaves the message to be
redelivered), retried with backoff on database hiccups. Each task works on the run queued
under its task id (extraction/runs.py), which GET /api/extraction-runs/{task_id} reads."""

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError

from extraction import runs, services, triggers

logger = logging.getLogger(__name__)

RETRY = {
    "acks_late": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "retry_backoff_max": 120,
    "max_retries": 5,
}


def _recorded(task, work):
    """`work()`, whose failure for good (anything but a database hiccup that autoretry will
    retry) also marks the task's run failed with the error, instead of leaving it queued or
    running. Here rather than in Task.on_failure, which in-process tasks that propagate their
    errors (CELERY_TASK_EAGER_PROPAGATES) never reach. A source deleted meanwhile is no
    failure: its run, if it is still there, ends skipped, and the task returns None."""
    try:
        return work()
    except services.SourceGone as gone:
        reason = f"the {gone} no longer exists (deleted, or its user erased)"
        runs.run_skip_unstarted(task_id=task.request.id, reason=reason)
        logger.info("extraction task %s: %s; nothing to do", task.request.id, reason)
        return None
    except Exception as exc:
        retried = isinstance(exc, RETRY["autoretry_for"]) and (
            task.request.retries < RETRY["max_retries"]
        )
        if not retried:
            try:
                runs.run_fail(task_id=task.request.id, error=f"{type(exc).__name__}: {exc}")
            except Exception:
                logger.exception("could not mark the run of task %s failed", task.request.id)
        raise


def _summary(run) -> dict | None:
    if run is None:  # its source was gone
        return None
    return {
        "run_id": str(run.id),
        "task_id": run.task_id,
        "status": run.status,
        "reason": run.reason,
        "result": run.result(),
    }


@shared_task(bind=True, **RETRY)
def extract_topic_task(self, topic_id: str, automatic: bool = False) -> dict | None:
    """Extract memories from one conversation."""
    run = _recorded(
        self,
        lambda: services.extract_topic(
            topic_id=topic_id,
            automatic=automatic,
            task_id=self.request.id,
            is_retry=bool(self.request.retries),
        ),
    )
    return _summary(run)


@shared_task(bind=True, **RETRY)
def extract_work_session_task(self, session_id: str) -> dict | None:
    """Extract memories from one work session."""
    run = _recorded(
        self,
        lambda: services.extract_work_session(
            session_id=session_id, task_id=self.request.id, is_retry=bool(self.request.retries)
        ),
    )
    return _summary(run)


@shared_task(**RETRY)
def scan_extractions_task() -> dict:
    """Queue extraction for every source with enough new activity (Celery beat)."""
    return triggers.scan_extractions()
