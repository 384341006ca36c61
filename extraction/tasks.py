"""Celery tasks: thin wrappers that load by id and call one service. Idempotent (the
service claims its source atomically and writes once), acknowledged late (a worker that dies
mid-task leaves the message to be redelivered), retried with backoff on database hiccups."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from extraction import services

RETRY = {
    "acks_late": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "retry_backoff_max": 120,
    "max_retries": 5,
}


def _summary(run) -> dict:
    return {
        "run_id": str(run.id),
        "status": run.status,
        "reason": run.reason,
        "result": run.result(),
    }


@shared_task(bind=True, **RETRY)
def extract_topic_task(self, topic_id: str, automatic: bool = False) -> dict:
    """Extract memories from one conversation."""
    run = services.extract_topic(topic_id=topic_id, automatic=automatic, task_id=self.request.id)
    return _summary(run)


@shared_task(bind=True, **RETRY)
def extract_work_session_task(self, session_id: str) -> dict:
    """Extract memories from one work session."""
    run = services.extract_work_session(session_id=session_id, task_id=self.request.id)
    return _summary(run)


@shared_task(**RETRY)
def scan_extractions_task() -> dict:
    """Queue extraction for every source with enough new activity (Celery beat)."""
    return services.scan_extractions()
