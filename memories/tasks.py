"""Celery tasks of the memories app: thin, idempotent, retried on database hiccups."""

from celery import shared_task
from django.db import InterfaceError, OperationalError

from memories.consolidation import consolidation_scan
from memories.erasure import ERASURE_RESUME_AFTER, erasures_finish
from memories.profiles.sweep import profiles_refresh
from memories.recall.vector_store.partition_indexes import partition_indexes_sync
from memories.retention.sweep import retention_sweep


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


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=120,
    max_retries=5,
)
def finish_erasures_task() -> int:
    """Finish the erasures a crash stopped half-way, started ERASURE_RESUME_AFTER ago or
    earlier (Celery beat, every ERASURE_FINISH_INTERVAL_SECONDS). Idempotent: every step of an
    erasure can be repeated, so a retried or concurrent run erases nothing twice."""
    return erasures_finish(started_before=ERASURE_RESUME_AFTER)


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=120,
    max_retries=5,
)
def index_partitions_task() -> dict:
    """Give partitions that have grown an HNSW graph of their own and drop those of partitions
    that have shrunk (Celery beat, every RECALL_PARTITION_INDEX_INTERVAL_SECONDS; PostgreSQL
    only). Idempotent: a build cut short leaves an invalid index, which the next run replaces;
    two runs at once leave it to the first (an advisory lock)."""
    return partition_indexes_sync()


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=120,
    max_retries=5,
)
def refresh_profiles_task() -> dict:
    """Write the profile summary of every user whose memories or entities changed since the
    last run (Celery beat, every PROFILE_REFRESH_INTERVAL_SECONDS). Idempotent: a summary that
    would read the same is not written again (memories.profiles)."""
    return profiles_refresh()


@shared_task(
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    retry_backoff_max=120,
    max_retries=5,
)
def expire_memories_task() -> dict:
    """Write the time the retention rules give memories and archive those whose time has come
    (Celery beat, every RETENTION_SWEEP_INTERVAL_SECONDS). Idempotent: each memory is
    archived once, under its lock, however many runs find it (memories.retention.sweep)."""
    return retention_sweep()
