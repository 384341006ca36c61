"""Reads for the staff review pages: the dashboard's figures, the filtered queue, a memory to
edit, and the conversation a memory came from. The views parse input and render; what they
show comes from here, memories.selectors and memories.consolidation."""

from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta
from typing import Any
from uuid import UUID

from django.db.models import Count, Min, Prefetch, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus
from memories import consolidation, selectors
from memories.models import (
    ConsolidationProposal,
    Entity,
    Memory,
    MemoryRevision,
    Message,
    ProposalStatus,
    RevisionAction,
    Status,
    Topic,
    User,
    WorkSession,
    WorkSessionMessage,
)
from ops.models import DailyUsage
from ops.usage import BUCKET_FIELDS, buckets_of
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


# --- The dashboard's charts: per day (UTC) since a moment, of what `actor` administers ---------

# An archival whose revision names the memory that took the fact over (superseded_by_id in
# its snapshot) is a replacement; the others (by hand, a consolidation, a pending proposal a
# later one replaced) are archivals. Older snapshots without the key count as archivals.
_REPLACED = Q(action=RevisionAction.ARCHIVE, after__superseded_by_id__isnull=False) & ~Q(
    after__superseded_by_id=None
)
_ARCHIVED = Q(action=RevisionAction.ARCHIVE) & (
    Q(after__superseded_by_id__isnull=True) | Q(after__superseded_by_id=None)
)


def memory_changes_per_day(*, actor: User, since: datetime) -> dict[str, dict[date, int]]:
    """Memories created (saved, extracted or imported), replaced and archived per day since
    `since`, read from the revisions of the memories `actor` administers:
    {"created": {day: count}, "replaced": ..., "archived": ...}."""
    revisions = MemoryRevision.objects.filter(created_at__gte=since)
    if actor.tenant_id is not None:
        administered = Memory.objects.filter(selectors.memories_administered_by(actor))
        revisions = revisions.filter(memory_id__in=administered.values("id"))
    rows = (
        revisions.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            created=Count(
                "id", filter=Q(action__in=[RevisionAction.CREATE, RevisionAction.IMPORT])
            ),
            replaced=Count("id", filter=_REPLACED),
            archived=Count("id", filter=_ARCHIVED),
        )
        .order_by()
    )
    changes: dict[str, dict[date, int]] = {"created": {}, "replaced": {}, "archived": {}}
    for row in rows:
        counted: dict[str, Any] = dict(row)
        for name, per_day in changes.items():
            if counted[name]:
                per_day[counted["day"]] = counted[name]
    return changes


def extraction_runs_per_day(*, actor: User, since: datetime) -> dict[str, dict[date, int]]:
    """Extraction runs per day since `since` by status, of the users `actor` administers:
    {status: {day: count}}."""
    rows = (
        _runs_administered_by(actor)
        .filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day", "status")
        .annotate(count=Count("id"))
        .order_by()
    )
    runs: dict[str, dict[date, int]] = {}
    for row in rows:
        runs.setdefault(row["status"], {})[row["day"]] = row["count"]
    return runs


def usage_per_day(*, actor: User, since: date) -> dict[str, dict[date, list[int]]]:
    """Searches and context calls per day from `since` (ops.usage), with their latency
    buckets, of every tenant for a local staff login, of its own for a tenant's account:
    {kind: {day: [bucket counts]}}; the count is their sum."""
    days = DailyUsage.objects.filter(day__gte=since)
    if actor.tenant_id is not None:
        days = days.filter(tenant_id=actor.tenant_id)
    rows = (
        days.values("day", "kind")
        .annotate(**{name: Sum(name) for name in BUCKET_FIELDS})
        .order_by()
    )
    usage: dict[str, dict[date, list[int]]] = {}
    for row in rows:
        summed: dict[str, Any] = dict(row)
        usage.setdefault(summed["kind"], {})[summed["day"]] = buckets_of(summed)
    return usage


# The review queue's age: (name, label, pending at most this old; None: older than the last).
QUEUE_AGES = (
    ("hour", "< 1 hour", timedelta(hours=1)),
    ("day", "1 h – 1 day", timedelta(days=1)),
    ("week", "1–7 days", timedelta(days=7)),
    ("older", "> 7 days", None),
)


def pending_by_age(*, actor: User) -> dict[str, Any]:
    """The pending memories `actor` reviews by age (QUEUE_AGES: {name: count}) and, under
    "oldest", when the oldest of them was made (None when none waits)."""
    now = timezone.now()
    buckets: dict[str, Any] = {}
    newer_than = None
    for name, _, limit in QUEUE_AGES:
        condition = Q()
        if limit is not None:
            condition &= Q(created_at__gte=now - limit)
        if newer_than is not None:
            condition &= Q(created_at__lt=now - newer_than)
        buckets[name] = Count("id", filter=condition) if condition else Count("id")
        newer_than = limit
    return (
        selectors.pending_memories(actor=actor)
        .order_by()
        .aggregate(**buckets, oldest=Min("created_at"))
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
