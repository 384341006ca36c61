"""Reads for the staff review pages: the dashboard's figures, the filtered queue, a memory to
edit, and the conversation a memory came from. The views parse input and render; what they
show comes from here, memories.selectors and memories.consolidation."""

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db.models import Count, Prefetch, Q, QuerySet
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus
from memories import consolidation, selectors
from memories.models import (
    ConsolidationProposal,
    Entity,
    Memory,
    Message,
    ProposalStatus,
    Status,
    Topic,
    User,
    WorkSession,
    WorkSessionMessage,
)
from review.forms import AGES

# Messages shown before the first cited one, so the reviewer sees what led up to it.
MESSAGES_BEFORE_CITED = 10


def _runs_administered_by(actor: User) -> QuerySet[ExtractionRun]:
    return ExtractionRun.objects.filter(selectors.administered_by(actor, via="user__"))


def extraction_run_counts(*, actor: User, since: datetime) -> dict[str, int]:
    """Runs since `since` of the users staff `actor` administers, by outcome. Skipped runs
    are not extractions (they read nothing and call no model), so `total` leaves them out and
    `skipped` counts them apart."""
    return (
        _runs_administered_by(actor)
        .filter(created_at__gte=since)
        .aggregate(
            total=Count("id", filter=~Q(status=RunStatus.SKIPPED)),
            failed=Count("id", filter=Q(status=RunStatus.FAILED)),
            done=Count("id", filter=Q(status=RunStatus.DONE)),
            skipped=Count("id", filter=Q(status=RunStatus.SKIPPED)),
        )
    )


def recent_extraction_runs(*, actor: User, limit: int) -> QuerySet[ExtractionRun]:
    """The last runs that were extractions (not skipped) of the users `actor` administers,
    newest first, with their user."""
    return (
        _runs_administered_by(actor)
        .exclude(status=RunStatus.SKIPPED)
        .select_related("user")
        .order_by("-created_at", "-id")[:limit]
    )


def failed_extraction_runs(*, actor: User, since: datetime, limit: int) -> QuerySet[ExtractionRun]:
    """Runs failed since `since` of the users `actor` administers, newest first, with their
    user."""
    return (
        _runs_administered_by(actor)
        .filter(created_at__gte=since, status=RunStatus.FAILED)
        .select_related("user")
        .order_by("-created_at", "-id")[:limit]
    )


def pending_proposal_count(*, actor: User) -> int:
    """Consolidation proposals waiting for a decision, of the users `actor` administers."""
    return ConsolidationProposal.objects.filter(
        selectors.administered_by(actor, via="user__"), status=ProposalStatus.PENDING
    ).count()


def queue_memories(*, actor: User, filters: Mapping[str, Any]) -> QuerySet[Memory]:
    """The pending memories staff `actor` reviews, newest first, with what their cards show,
    narrowed by the queue's filters (a QueueFilterForm's cleaned data; empty values and
    missing fields do not narrow)."""
    pending = selectors.pending_memories(actor=actor).select_related(
        "user", "persona", "project", "topic", "supersedes", "source_topic", "source_work_session"
    )
    for name in ("user", "persona", "scope", "source", "category"):
        if filters.get(name):
            pending = pending.filter(**{name: filters[name]})
    for name in ("source_topic", "source_work_session"):
        if filters.get(name):
            pending = pending.filter(**{f"{name}_id": filters[name]})
    now = timezone.now()
    for value, _, newer_than, older_than in AGES:
        if filters.get("age") == value:
            if newer_than:
                pending = pending.filter(created_at__gte=now - newer_than)
            if older_than:
                pending = pending.filter(created_at__lt=now - older_than)
    return pending


def memory_to_edit(*, actor: User, memory_id: UUID) -> Memory | None:
    """A live memory `actor` administers, with the source and the memory it replaces, which
    the edit page shows."""
    return (
        Memory.objects.select_related("source_topic", "source_work_session", "supersedes")
        .filter(selectors.memories_administered_by(actor), id=memory_id, deleted_at__isnull=True)
        .first()
    )


def administered_ids(*, actor: User, memory_ids: Iterable[UUID]) -> list[UUID]:
    """Those of `memory_ids` that staff `actor` administers, in the order given (another
    tenant's are left out, as ids that name nothing)."""
    wanted = list(memory_ids)
    administered = set(
        Memory.objects.filter(selectors.memories_administered_by(actor), id__in=wanted).values_list(
            "id", flat=True
        )
    )
    return [memory_id for memory_id in wanted if memory_id in administered]


def pending_proposals(*, actor: User, kind: str = "") -> QuerySet[ConsolidationProposal]:
    """Pending proposals of the users `actor` administers, of one kind if given."""
    pending = consolidation.proposals_for_review(actor=actor).filter(status=ProposalStatus.PENDING)
    if kind:
        pending = pending.filter(kind=kind)
    return pending


def conversation_source(*, actor: User, kind: str, source_id: UUID) -> Topic | WorkSession | None:
    """The topic ("topic") or work session ("work-session") of a user staff `actor`
    administers, with whom it belongs to (another tenant's is not found)."""
    administered = selectors.administered_by(actor, via="user__")
    if kind == "topic":
        return Topic.objects.select_related("user").filter(administered, id=source_id).first()
    if kind == "work-session":
        sessions = WorkSession.objects.select_related("user", "project")
        return sessions.filter(administered, id=source_id).first()
    return None


def memory_from_source(source: Topic | WorkSession, memory_id: UUID) -> Memory | None:
    """The memory, if it was extracted from `source` (another's is not shown against it)."""
    field = "source_topic" if isinstance(source, Topic) else "source_work_session"
    return Memory.objects.filter(id=memory_id, **{field: source}).first()


def _source_messages(source: Topic | WorkSession) -> QuerySet[Message | WorkSessionMessage]:
    return source.messages.order_by("id")


def conversation_window(
    source: Topic | WorkSession, *, memory: Memory | None, limit: int
) -> list[Message | WorkSessionMessage]:
    """The messages of `source` to show for `memory`, in order: from a few before the first
    message it cites, up to `limit` from there; for a memory citing none, the last `limit`
    said before it was made; without a memory, the last `limit`."""
    messages = _source_messages(source)
    cited = memory.source_message_ids if memory else []
    if cited:
        first = min(cited)
        before = list(messages.filter(id__lt=first).order_by("-id")[:MESSAGES_BEFORE_CITED])
        return before[::-1] + list(messages.filter(id__gte=first)[:limit])
    if memory is not None:
        made_before = messages.filter(created_at__lte=memory.created_at).order_by("-id")
        return list(made_before[:limit])[::-1]
    return list(messages.order_by("-id")[:limit])[::-1]


def conversation_message_count(source: Topic | WorkSession) -> int:
    return _source_messages(source).count()


def entities_of_users(*, actor: User, user_id: UUID | None = None) -> QuerySet[Entity]:
    """The entities of the users `actor` administers (of one user with user_id), with their
    current memories, by user, relation and name."""
    current = Memory.objects.filter(status=Status.ACTIVE, deleted_at__isnull=True).order_by(
        "-updated_at"
    )
    entities = Entity.objects.filter(selectors.administered_by(actor, via="user__"))
    if user_id is not None:
        entities = entities.filter(user_id=user_id)
    return (
        entities.select_related("user")
        .prefetch_related(Prefetch("memories", queryset=current, to_attr="current_memories"))
        .order_by("user__username", "relation", "name", "id")
    )
