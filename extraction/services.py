"""Extraction: read what is new in a conversation or work session, ask the utility model (or
the rules) for memories, and save them as pending_review after deduplication.

Safe to run on several workers at once and to retry: a run first claims its source with a
conditional UPDATE (one claimant wins), calls the model outside any transaction, and then
writes its memories and moves the source's cursor in one transaction, only if the cursor is
still where the run started. A duplicated or retried task therefore writes nothing twice.
"""

import logging
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Max, Q, Sum
from django.db.models.functions import Coalesce, Length
from django.utils import timezone

from extraction import llm, policy
from extraction.merge import classify, normalise
from extraction.models import ExtractionRun, ExtractionState, RunStatus, SourceKind
from extraction.parsing import Candidate, parse_candidates
from extraction.prompt import EXTRACTABLE_ROLES, build_messages
from extraction.rules import extract_by_rules
from memories import services as memory_services
from memories.embedders import get_embedder
from memories.models import (
    ConfigEntry,
    Memory,
    MessageRole,
    Scope,
    Source,
    Status,
    Topic,
    WorkSession,
)
from memories.recall.vector_store import get_vector_store, partition_key

logger = logging.getLogger(__name__)


@dataclass
class ExtractionSource:
    """A topic or a work session, seen the same way by the extraction steps."""

    kind: str
    id: uuid.UUID
    user: object
    messages: object  # related manager of the source's messages
    memory_source: str
    topic: Topic | None = None
    work_session: WorkSession | None = None
    project: object = None
    persona: object = None
    state_filter: dict = field(default_factory=dict)

    @classmethod
    def of_topic(cls, topic: Topic) -> "ExtractionSource":
        return cls(
            kind=SourceKind.TOPIC,
            id=topic.id,
            user=topic.user,
            messages=topic.messages,
            memory_source=Source.CONVERSATION,
            topic=topic,
            project=topic.project,
            persona=topic.persona,
            state_filter={"topic": topic},
        )

    @classmethod
    def of_work_session(cls, session: WorkSession) -> "ExtractionSource":
        return cls(
            kind=SourceKind.WORK_SESSION,
            id=session.id,
            user=session.user,
            messages=session.messages,
            memory_source=Source.WORK,
            work_session=session,
            project=session.project,
            state_filter={"work_session": session},
        )

    def carriers(self, scope: str) -> dict:
        """Where a candidate of `scope` lands for this source; scopes the source cannot
        carry fall back to the nearest one it can (work sessions have no topic: session
        facts belong to the project there)."""
        if scope == Scope.SESSION and self.topic is not None:
            return {"scope": Scope.SESSION, "user": self.user, "topic": self.topic}
        if scope in (Scope.SESSION, Scope.PROJECT) and self.project is not None:
            return {"scope": Scope.PROJECT, "user": self.user, "project": self.project}
        if scope == Scope.PERSONA_USER and self.persona is not None:
            return {"scope": Scope.PERSONA_USER, "user": self.user, "persona": self.persona}
        return {"scope": Scope.USER, "user": self.user}


def extraction_enabled() -> bool:
    entry = ConfigEntry.objects.filter(key="memory_extraction_enabled").first()
    return bool(entry.value) if entry else True


def _activity(source: ExtractionSource, cursor: int) -> policy.Activity:
    new_user = source.messages.filter(id__gt=cursor, role=MessageRole.USER).aggregate(
        count=Count("id"), chars=Coalesce(Sum(Length("content")), 0)
    )
    last_at = source.messages.filter(id__gt=cursor).aggregate(at=Max("created_at"))["at"]
    return policy.Activity(
        new_user_messages=new_user["count"],
        new_user_chars=new_user["chars"],
        last_message_at=last_at,
    )


def _finish(source, *, status, reason="", task_id="", **fields) -> ExtractionRun:
    run_id = uuid.uuid4()
    return ExtractionRun.objects.create(
        id=run_id,
        user=source.user,
        source_kind=source.kind,
        source_id=source.id,
        task_id=task_id or str(run_id),
        status=status,
        reason=reason[:300],
        finished_at=timezone.now(),
        **fields,
    )


def extract_topic(
    *, topic_id: uuid.UUID, automatic: bool = False, task_id: str = ""
) -> ExtractionRun:
    """Extract from a conversation. `automatic` applies the trigger policy first (scanner,
    posted messages); a direct call extracts whatever is new. Never raises for model errors:
    they end as a failed run."""
    topic = Topic.objects.select_related("user", "project", "persona").get(id=topic_id)
    source = ExtractionSource.of_topic(topic)
    return _extract(source, automatic=automatic, task_id=task_id)


def extract_work_session(*, session_id: uuid.UUID, task_id: str = "") -> ExtractionRun:
    """Extract from a work session: managed projects only, every N new user messages."""
    session = WorkSession.objects.select_related("user", "project").get(id=session_id)
    return _extract(ExtractionSource.of_work_session(session), automatic=True, task_id=task_id)


def _skip_reason(source: ExtractionSource, cursor: int, automatic: bool) -> str | None:
    if not extraction_enabled():
        return "extraction is switched off (memory_extraction_enabled)"
    if source.persona is not None and not source.persona.memory_enabled:
        return "memory is switched off for this persona (memory_enabled)"
    activity = _activity(source, cursor)
    if source.kind == SourceKind.WORK_SESSION:
        decision = policy.work_session_decision(
            has_project=source.project is not None, new_user_messages=activity.new_user_messages
        )
    elif not source.messages.filter(id__gt=cursor, role__in=EXTRACTABLE_ROLES).exists():
        return "no new messages"
    elif automatic:
        decision = policy.conversation_decision(activity, now=timezone.now())
    else:
        return None
    return None if decision.extract else decision.reason


def _extract(source: ExtractionSource, *, automatic: bool, task_id: str) -> ExtractionRun:
    state, _ = ExtractionState.objects.get_or_create(**source.state_filter)
    cursor = state.last_message_id
    reason = _skip_reason(source, cursor, automatic)
    if reason:
        return _finish(source, status=RunStatus.SKIPPED, reason=reason, task_id=task_id)

    messages = list(
        source.messages.filter(id__gt=cursor, role__in=EXTRACTABLE_ROLES)
        .order_by("id")
        .values_list("id", "role", "content")[: settings.EXTRACTION_MAX_MESSAGES_PER_RUN]
    )
    read_to = messages[-1][0]
    claim = _claim(state, cursor)
    if claim is None:
        return _finish(
            source,
            status=RunStatus.SKIPPED,
            reason="another extraction of this source is running or has finished",
            task_id=task_id,
        )

    # Slow I/O, outside any transaction: the model, then the embeddings.
    extractor = "llm" if llm.is_configured() else "rules"
    try:
        if extractor == "llm":
            candidates, attempts = llm.complete_json(
                build_messages((r, c) for _, r, c in messages), parse=parse_candidates
            )
        else:
            attempts = 0
            candidates = extract_by_rules([c for _, r, c in messages if r == MessageRole.USER])
        vectors = _embed(candidates)
    except llm.ExtractionFailed as exc:
        _release(state, claim)
        logger.warning("extraction of %s %s failed: %s", source.kind, source.id, exc.reason)
        return _finish(
            source,
            status=RunStatus.FAILED,
            reason=exc.reason,
            task_id=task_id,
            extractor=extractor,
            attempts=exc.attempts,
            from_message_id=messages[0][0],
            to_message_id=read_to,
        )
    except Exception:
        _release(state, claim)
        raise

    with transaction.atomic():
        locked = ExtractionState.objects.select_for_update().get(id=state.id)
        if locked.claim_token != claim or locked.last_message_id != cursor:
            return _finish(
                source,
                status=RunStatus.SKIPPED,
                reason="another extraction of this source finished first",
                task_id=task_id,
            )
        counts = _save_candidates(source, candidates, vectors)
        locked.last_message_id = read_to
        locked.last_extracted_at = timezone.now()
        locked.claim_token = None
        locked.claimed_until = None
        locked.save(
            update_fields=["last_message_id", "last_extracted_at", "claim_token", "claimed_until"]
        )
        return _finish(
            source,
            status=RunStatus.DONE,
            task_id=task_id,
            extractor=extractor,
            attempts=attempts,
            from_message_id=messages[0][0],
            to_message_id=read_to,
            **counts,
        )


def _claim(state: ExtractionState, cursor: int) -> uuid.UUID | None:
    """Take the source for this run, unless another run holds an unexpired claim. The
    conditional UPDATE is the lock: of two workers, exactly one updates the row."""
    now = timezone.now()
    token = uuid.uuid4()
    claimed = (
        ExtractionState.objects.filter(id=state.id, last_message_id=cursor)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(
            claim_token=token,
            claimed_until=now + timedelta(seconds=settings.EXTRACTION_CLAIM_SECONDS),
        )
    )
    return token if claimed else None


def _release(state: ExtractionState, claim: uuid.UUID) -> None:
    ExtractionState.objects.filter(id=state.id, claim_token=claim).update(
        claim_token=None, claimed_until=None
    )


def _embed(candidates: list[Candidate]) -> list[list[float] | None]:
    embedder = get_embedder()
    if embedder is None or not candidates:
        return [None] * len(candidates)
    texts = [f"{c.key}: {c.value}" for c in candidates]
    return embedder.embed(texts)


def _comparable(carriers: dict, candidate: Candidate, vector, same_text: dict) -> tuple:
    """The user's memories worth comparing with a candidate, and their similarity to it:
    those with the same normalised text or key (from `same_text`, the scope's memories by
    normalised value and key) and the nearest by vector."""
    similarity = {}
    if vector is not None:
        partition = partition_key(
            scope=carriers["scope"],
            user_id=getattr(carriers.get("user"), "id", None),
            persona_id=getattr(carriers.get("persona"), "id", None),
            project_id=getattr(carriers.get("project"), "id", None),
            topic_id=getattr(carriers.get("topic"), "id", None),
        )
        store = get_vector_store()
        for status in (Status.ACTIVE, Status.PENDING_REVIEW):
            for hit in store.nearest(vector=vector, partitions=[partition], k=5, status=status):
                similarity[hit.memory_id] = hit.similarity
    ids = set(similarity)
    ids |= same_text.get(("value", normalise(candidate.value)), set())
    ids |= same_text.get(("key", normalise(candidate.key)), set())
    return list(Memory.objects.filter(id__in=ids)), similarity


def _scope_texts(carriers: dict) -> dict:
    """The scope's live active and pending memories by normalised value and by normalised
    key. One query per scope and run: normalising happens in Python, so it is the same
    function on both databases."""
    rows = Memory.objects.filter(
        scope=carriers["scope"],
        user=carriers.get("user"),
        project=carriers.get("project"),
        topic=carriers.get("topic"),
        persona=carriers.get("persona"),
        deleted_at__isnull=True,
        status__in=[Status.ACTIVE, Status.PENDING_REVIEW],
    ).values_list("id", "key", "value")
    index: dict = {}
    for memory_id, key, value in rows:
        index.setdefault(("value", normalise(value)), set()).add(memory_id)
        index.setdefault(("key", normalise(key)), set()).add(memory_id)
    return index


def _save_candidates(source, candidates, vectors) -> dict:
    created = merged = skipped = 0
    seen: set[tuple[str, str]] = set()
    texts_by_scope: dict = {}
    for candidate, vector in zip(candidates, vectors, strict=True):
        carriers = source.carriers(candidate.scope)
        fingerprint = (carriers["scope"], normalise(candidate.value))
        if fingerprint in seen:
            skipped += 1
            continue
        seen.add(fingerprint)
        scope_key = tuple(sorted((name, getattr(v, "id", v)) for name, v in carriers.items()))
        if scope_key not in texts_by_scope:
            texts_by_scope[scope_key] = _scope_texts(carriers)
        existing, similarity = _comparable(carriers, candidate, vector, texts_by_scope[scope_key])
        decision = classify(
            key=candidate.key,
            value=candidate.value,
            existing=existing,
            similarity=similarity,
            duplicate_similarity=settings.EXTRACTION_DUPLICATE_SIMILARITY,
        )
        if decision.kind == "duplicate":
            skipped += 1
            continue
        memory_services.memory_create(
            actor=None,
            key=candidate.key,
            value=candidate.value,
            category=candidate.category,
            importance=candidate.importance,
            confidence=candidate.confidence,
            source=source.memory_source,
            status=Status.PENDING_REVIEW,
            supersedes=decision.existing if decision.kind == "conflict" else None,
            vector=vector,
            note=f"extracted from {source.kind} {source.id}",
            **carriers,
        )
        if decision.kind == "conflict":
            merged += 1
        else:
            created += 1
    return {"created": created, "merged": merged, "skipped": skipped}


def queue_if_due(source: ExtractionSource, cursor: int) -> bool:
    """Queue the source's extraction (after the current transaction commits) when the
    trigger policy says it is due. The task checks again: this is only a cheap filter."""
    from extraction.tasks import extract_topic_task, extract_work_session_task

    activity = _activity(source, cursor)
    if source.kind == SourceKind.TOPIC:
        if not policy.conversation_decision(activity, now=timezone.now()).extract:
            return False
        transaction.on_commit(lambda: extract_topic_task.delay(str(source.id), True))
        return True
    decision = policy.work_session_decision(
        has_project=source.project is not None, new_user_messages=activity.new_user_messages
    )
    if not decision.extract:
        return False
    transaction.on_commit(lambda: extract_work_session_task.delay(str(source.id)))
    return True


def message_posted(*, kind: str, source_id: uuid.UUID) -> None:
    """Hook for a newly committed message (settings.MESSAGE_POSTED_HOOKS)."""
    if not extraction_enabled():
        return
    if kind == SourceKind.TOPIC:
        topic = Topic.objects.select_related("persona", "project").get(id=source_id)
        if topic.persona is not None and not topic.persona.memory_enabled:
            return
        source = ExtractionSource.of_topic(topic)
    else:
        source = ExtractionSource.of_work_session(
            WorkSession.objects.select_related("project").get(id=source_id)
        )
    state = ExtractionState.objects.filter(**source.state_filter).first()
    queue_if_due(source, state.last_message_id if state else 0)


def scan_extractions(*, limit: int = 500) -> dict:
    """Find topics and work sessions with new activity and queue those whose extraction is
    due. Returns how many of each were queued."""
    queued = {"topics": 0, "work_sessions": 0}
    if not extraction_enabled():
        return queued
    # Only user messages make a source due; newest activity first, so a limited scan is not
    # crowded out by sources that never become due.
    with_news = {
        "newest": Max("messages__id", filter=Q(messages__role=MessageRole.USER)),
        "cursor": Coalesce(Max("extractionstate__last_message_id"), 0),
    }
    topics = (
        Topic.objects.annotate(**with_news)
        .filter(newest__gt=F("cursor"))
        .exclude(persona__memory_enabled=False)
        .order_by("-newest")
        .select_related("persona", "project", "user")[:limit]
    )
    for topic in topics:
        queued["topics"] += queue_if_due(ExtractionSource.of_topic(topic), topic.cursor)
    sessions = (
        WorkSession.objects.filter(project__isnull=False)
        .annotate(**with_news)
        .filter(newest__gt=F("cursor"))
        .order_by("-newest")
        .select_related("project", "user")[:limit]
    )
    for session in sessions:
        queued["work_sessions"] += queue_if_due(
            ExtractionSource.of_work_session(session), session.cursor
        )
    return queued
