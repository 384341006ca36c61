"""Celery tasks of the memories app: thin, idempotent, retried on database hiccups."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from memories.consolidation import consolidation_scan


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=120,
    max_retries=5,
)
def consolidate_memories_task() -> dict:
    """Propose merges of near-duplicate memories and archivals of unused ones for review
    (Celery beat, every CONSOLIDATION_INTERVAL_SECONDS). Idempotent: a repeated or retried
    run proposes nothing twice (memories.consolidation)."""
    return consolidation_scan().counts()
