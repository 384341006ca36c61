"""The life of an extraction run, from queued to its outcome: every change of its
status is one conditional UPDATE, so that several workers, a task delivered twice and a
retried task can meet on one run without two of them moving it.

    queued --(a delivery takes it)--> running --> done | skipped | failed
                                         ^  |
                                         +--+ a retry of the same task, or a delivery that
                                              finds the run running past the claim time

A run's `started_at` tells its attempts apart: only the attempt that set it may record the
outcome. A finished run is never moved again.
"""

import logging
import uuid
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from extraction.models import ExtractionRun, ExtractionState, RunStatus, SourceKind
from extraction.representations import ExtractionRunSerializer
from memories.models import User
from ops.metrics import count_extraction_run
from webhooks.events import event_emit
from webhooks.models import EventType

logger = logging.getLogger(__name__)

FINISHED = (RunStatus.DONE, RunStatus.SKIPPED, RunStatus.FAILED)


def _claim_cutoff():
    return timezone.now() - timedelta(seconds=settings.EXTRACTION_CLAIM_SECONDS)


def fresh_run(*, kind: str, source_id: uuid.UUID) -> ExtractionRun | None:
    """The source's newest run still on its way: queued, or running, within the claim time
    (EXTRACTION_CLAIM_SECONDS). Older ones count as lost (a broker that dropped the message,
    a worker that died) and hold nothing back."""
    cutoff = _claim_cutoff()
    return (
        ExtractionRun.objects.filter(source_kind=kind, source_id=source_id)
        .filter(
            Q(status=RunStatus.QUEUED, created_at__gte=cutoff)
            | Q(status=RunStatus.RUNNING, started_at__gte=cutoff)
        )
        .order_by("-created_at")
        .first()
    )


def run_queue(
    *, kind: str, source_id: uuid.UUID, user: User, automatic: bool
) -> tuple[ExtractionRun, bool]:
    """Queue one extraction of a source: a `queued` run with a task id made here, then its
    task, sent with that id, so GET /api/extraction-runs/{task_id} answers at once. A source
    that already has a fresh run (see fresh_run) is not queued twice: that run comes back,
    with False. Returns the run as it stands once sent (in process: finished). Raises what
    sending raises, after marking the run failed."""
    is_topic = kind == SourceKind.TOPIC
    state_of: dict[str, Any] = (
        {"topic_id": source_id} if is_topic else {"work_session_id": source_id}
    )
    with transaction.atomic():
        # The source's state row is the lock: of two callers queueing one source at once (two
        # posts, a post and the scanner) the second waits here, then finds the first one's
        # run. On SQLite the IMMEDIATE transaction already serialises writers.
        ExtractionState.objects.select_for_update().get_or_create(**state_of)
        fresh = fresh_run(kind=kind, source_id=source_id)
        if fresh is not None:
            return fresh, False
        run = ExtractionRun.objects.create(
            task_id=str(uuid.uuid4()),
            status=RunStatus.QUEUED,
            user=user,
            source_kind=kind,
            source_id=source_id,
        )
    count_extraction_run(RunStatus.QUEUED)
    _send(run, automatic=automatic)
    run.refresh_from_db()
    return run, True


# The tasks each source kind's run is sent to, by name: extraction.tasks (registered when the
# app is ready) imports services, which imports this module.
TASK_NAMES: dict[str, str] = {
    SourceKind.TOPIC: "extraction.tasks.extract_topic_task",
    SourceKind.WORK_SESSION: "extraction.tasks.extract_work_session_task",
}


def _send(run: ExtractionRun, *, automatic: bool) -> None:
    """Send the run's task under the run's task id, once the row is visible to whoever runs
    it. A worker is another process: it must find the row committed, so the task goes out on
    commit (at once where no transaction is open, as in views and the scanner). In process
    (no broker) the task runs here, on this connection, and sees the row committed or not:
    it runs now, so the caller can answer its outcome. Nothing calls this inside a longer
    transaction in process, which would hold that transaction open over the model call."""
    task = current_app.tasks[TASK_NAMES[run.source_kind]]
    if run.source_kind == SourceKind.TOPIC:
        args = [str(run.source_id), automatic]
    else:
        args = [str(run.source_id)]

    def send() -> None:
        try:
            task.apply_async(args=args, task_id=run.task_id)
        except Exception as exc:
            # The broker is unreachable (or, in process, the task itself raised): a run left
            # queued would hold back its source's next extraction for the claim time.
            run_fail(task_id=run.task_id, error=f"{type(exc).__name__}: {exc}")
            raise

    if task.app.conf.task_always_eager:
        send()
    else:
        transaction.on_commit(send)


def run_start(
    *, kind: str, source_id: uuid.UUID, user: User, task_id: str = "", is_retry: bool = False
) -> tuple[ExtractionRun, bool]:
    """Move the task's run to running for this attempt. Returns the run and whether this
    attempt holds it; when it does not (another delivery holds it, or it is finished) the
    run comes back as it is and the caller must leave it alone. A call without a task id
    (a direct service call) gets a running run of its own, addressed by its own id; a task
    sent without a queued run (by hand, or queued before runs were) gets one made here."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.EXTRACTION_CLAIM_SECONDS)
    source = {"user": user, "source_kind": kind, "source_id": source_id}
    if not task_id:
        run_id = uuid.uuid4()
        run = ExtractionRun.objects.create(
            id=run_id, task_id=str(run_id), status=RunStatus.RUNNING, started_at=now, **source
        )
        count_extraction_run(RunStatus.RUNNING)
        return run, True
    # task_id is unique: of two deliveries making the row at once, one inserts and the other
    # finds it (get_or_create catches the IntegrityError and reads again).
    ExtractionRun.objects.get_or_create(
        task_id=task_id, defaults={"status": RunStatus.QUEUED, **source}
    )
    # The conditional UPDATE is the lock: of two deliveries of one task, exactly one moves
    # the run from queued. A retry follows an attempt of its own that raised, so it takes the
    # run over; so does a delivery that finds it running past the claim time (its worker
    # died: acks_late redelivers the message). Anyone else finds it in other hands.
    takeover = Q(status=RunStatus.QUEUED) | Q(status=RunStatus.RUNNING, started_at__lt=cutoff)
    if is_retry:
        takeover |= Q(status=RunStatus.RUNNING)
    moved = (
        ExtractionRun.objects.filter(task_id=task_id)
        .filter(takeover)
        .update(status=RunStatus.RUNNING, started_at=now, finished_at=None)
    )
    run = ExtractionRun.objects.get(task_id=task_id)
    if moved:
        count_extraction_run(RunStatus.RUNNING)
        logger.info("extraction run %s (task %s) started", run.id, task_id)
    return run, bool(moved) and run.started_at == now


def run_finish(run: ExtractionRun, *, status: str, reason: str = "", **fields) -> bool:
    """Record the outcome of the attempt that started `run` (done, skipped or failed, the
    counts, memory_ids...). Returns False, changing nothing, when that attempt no longer
    holds the run: another delivery took it over, and its outcome is the one to keep."""
    finished = ExtractionRun.objects.filter(
        id=run.id, status=RunStatus.RUNNING, started_at=run.started_at
    ).update(status=status, reason=reason[:300], finished_at=timezone.now(), **fields)
    if finished:
        # For done, inside _extract's transaction, as its last statement before the commit.
        count_extraction_run(status)
        _finished_event(run.id, user_id=run.user_id)
    return bool(finished)


def run_fail(*, task_id: str, error: str) -> bool:
    """Mark the task's run failed with `error`, unless it has finished already: the task gave
    up (an unexpected error, retries exhausted) or never left (broker down)."""
    failed = ExtractionRun.objects.filter(
        task_id=task_id, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
    ).update(status=RunStatus.FAILED, reason=error[:300], finished_at=timezone.now())
    if failed:
        count_extraction_run(RunStatus.FAILED)
        logger.warning("extraction task %s failed: %s", task_id, error[:300])
        run = ExtractionRun.objects.filter(task_id=task_id).values_list("id", "user_id").first()
        if run is not None:
            _finished_event(run[0], user_id=run[1])
    return bool(failed)


def run_skip_unstarted(*, task_id: str, reason: str) -> bool:
    """Mark the task's run skipped with `reason` if it is still queued or running: its source
    is gone (deleted, or its user erased, which takes the run with it: then nothing is left
    to mark)."""
    skipped = ExtractionRun.objects.filter(
        task_id=task_id, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
    ).update(status=RunStatus.SKIPPED, reason=reason[:300], finished_at=timezone.now())
    if skipped:
        count_extraction_run(RunStatus.SKIPPED)
        run = ExtractionRun.objects.filter(task_id=task_id).values_list("id", "user_id").first()
        if run is not None:
            _finished_event(run[0], user_id=run[1])
    return bool(skipped)


def _finished_event(run_id: uuid.UUID, *, user_id: uuid.UUID | None) -> None:
    """extraction_run.finished: the run as the API shows it, read back after its outcome."""
    event_emit(
        EventType.EXTRACTION_RUN_FINISHED,
        user_id=user_id,
        data=lambda: dict(ExtractionRunSerializer(ExtractionRun.objects.get(id=run_id)).data),
    )
