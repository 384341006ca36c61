"""When extraction runs: after a post of user messages (settings.MESSAGE_POSTED_HOOKS) and
in the periodic scan, a source's extraction is queued once the trigger policy says it is due."""

import uuid

from django.db.models import F, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from extraction import policy, runs
from extraction.models import ExtractionRun, ExtractionState, SourceKind
from extraction.representations import ExtractionRunSerializer, not_triggered
from extraction.sources import ExtractionSource, extraction_enabled, source_activity
from memories.models import (
    MessageRole,
    Topic,
    WorkSession,
)


def due(source: ExtractionSource, cursor: int) -> policy.Decision:
    """Whether the trigger policy says the source's extraction is due, and why (not)."""
    activity = source_activity(source, cursor)
    if source.kind == SourceKind.TOPIC:
        return policy.conversation_decision(activity, now=timezone.now())
    return policy.work_session_decision(
        has_project=source.project is not None, new_user_messages=activity.new_user_messages
    )


def queue_if_due(source: ExtractionSource, cursor: int) -> tuple[ExtractionRun, bool] | None:
    """Queue the source's extraction when the trigger policy says it is due: its run, and
    whether it is new (False: a fresh run of the source was on its way already and is
    returned instead, see runs.run_queue). None when nothing is due. The task checks again:
    this is only a cheap filter."""
    if not due(source, cursor).extract:
        return None
    return runs.run_queue(kind=source.kind, source_id=source.id, user=source.user, automatic=True)


def message_posted(*, kind: str, source_id: uuid.UUID) -> dict:
    """Hook for newly committed user messages (settings.MESSAGE_POSTED_HOOKS), called once per
    post however many messages it carried: queue the source's extraction if it is due.
    Returns what the post answers as its `extraction`: the run as GET /api/extraction-runs
    shows it (in process the task has run by then, so its status is the outcome; it may be a
    run that was already on its way, as runs.run_queue does not queue a source twice), or
    {"status": "not_triggered", "reason"} saying why nothing was started."""
    if not extraction_enabled():
        return not_triggered(
            "Extraction is switched off (the memory_extraction_enabled config entry)."
        )
    if kind == SourceKind.TOPIC:
        topic = Topic.objects.select_related("user", "persona", "project").get(id=source_id)
        if topic.persona is not None and not topic.persona.memory_enabled:
            return not_triggered("This topic's persona has memory_enabled off.")
        source = ExtractionSource.of_topic(topic)
        by_hand = f"POST /api/memories/extract/{source_id} extracts now"
    else:
        source = ExtractionSource.of_work_session(
            WorkSession.objects.select_related("user", "project").get(id=source_id)
        )
        by_hand = f"POST /api/memories/extract-work/{source_id} extracts now"
    state = ExtractionState.objects.filter(**source.state_filter).first()
    decision = due(source, state.last_message_id if state else 0)
    if not decision.extract:
        return not_triggered(f"Not due yet: {decision.reason}; {by_hand}.")
    run, _ = runs.run_queue(kind=source.kind, source_id=source.id, user=source.user, automatic=True)
    return dict(ExtractionRunSerializer(run).data)


def scan_extractions(*, limit: int = 500) -> dict:
    """Find topics and work sessions with new activity and queue those whose extraction is
    due. Returns how many of each were queued (a source whose run is still on its way is not
    queued again, and not counted)."""
    queued = {"topics": 0, "work_sessions": 0}
    if not extraction_enabled():
        return queued
    # Only user messages make a source due; newest activity first, so a limited scan is not
    # crowded out by sources that never become due.
    newest = Max("messages__id", filter=Q(messages__role=MessageRole.USER))
    cursor = Coalesce(Max("extractionstate__last_message_id"), 0)
    topics = (
        Topic.objects.annotate(newest=newest, cursor=cursor)
        .filter(newest__gt=F("cursor"))
        .exclude(persona__memory_enabled=False)
        .order_by("-newest")
        .select_related("persona", "project", "user")[:limit]
    )
    for topic in topics:
        queued["topics"] += _is_new(queue_if_due(ExtractionSource.of_topic(topic), topic.cursor))
    sessions = (
        WorkSession.objects.filter(project__isnull=False)
        .annotate(newest=newest, cursor=cursor)
        .filter(newest__gt=F("cursor"))
        .order_by("-newest")
        .select_related("project", "user")[:limit]
    )
    for session in sessions:
        queued["work_sessions"] += _is_new(
            queue_if_due(ExtractionSource.of_work_session(session), session.cursor)
        )
    return queued


def _is_new(queued: tuple[ExtractionRun, bool] | None) -> bool:
    return queued is not None and queued[1]
