"""Reads for the review pages' users explorer: the users a reviewer administers with their
memory counts, one user's memories as the page filters them, and the timeline of changes to
their memories read from the revisions."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db.models import Case, Count, Max, Q, QuerySet, Value, When
from django.utils import timezone

from memories.models import Memory, MemoryRevision, RevisionAction, Status, User, unexpired
from memories.retention.expiry import current_memories
from memories.selectors import administered_by

# The status filter's values beside the statuses themselves: "" the current memories (the
# page's default), "deleted" the soft-deleted ones of any status.
CURRENT = ""
DELETED = "deleted"

# The fields a timeline entry shows the change of, in this order (the rest of a revision's
# snapshot, as valid_from or retention_expires_at, follows from these or from the action).
SHOWN_FIELDS = ("key", "value", "category", "importance", "confidence", "pinned", "expires_at")


def users_listed(*, actor: User, search: str = "") -> QuerySet[User]:
    """The users staff `actor` administers (administered_by: every user for a local login,
    its tenant's end users for a review key's account), newest first, with their tenant and
    their memory counts in one query: live ones by status (pending, active, archived) and the
    soft-deleted ones. Neither API key accounts nor users being erased are listed. `search`
    keeps those whose external id or username holds it (any case).

    `last_memory_at` is when one of their memories last changed (updated_at) and
    `last_recalled_at` when recall last returned one (last_accessed_at): the user's last
    activity is the later of the two (last_activity_at). Their messages are not read:
    a message a product posts leaves no mark here unless extraction keeps something from it,
    and a per-user look-up of the newest message would cost every listed row a subquery."""
    users = User.objects.filter(
        administered_by(actor), erasure_started_at__isnull=True, api_key__isnull=True
    )
    if search:
        users = users.filter(Q(external_id__icontains=search) | Q(username__icontains=search))
    live = Q(memory__deleted_at__isnull=True)
    return (
        users.select_related("tenant")
        .annotate(
            pending=Count("memory", filter=live & Q(memory__status=Status.PENDING_REVIEW)),
            active=Count("memory", filter=live & Q(memory__status=Status.ACTIVE)),
            archived=Count("memory", filter=live & Q(memory__status=Status.ARCHIVED)),
            deleted=Count("memory", filter=Q(memory__deleted_at__isnull=False)),
            last_memory_at=Max("memory__updated_at"),
            last_recalled_at=Max("memory__last_accessed_at"),
        )
        .order_by("-date_joined", "-id")
    )


def last_activity_at(user: User) -> datetime | None:
    """The later of a listed user's last memory change and last recall (users_listed)."""
    annotated = (getattr(user, "last_memory_at", None), getattr(user, "last_recalled_at", None))
    moments = [moment for moment in annotated if moment is not None]
    return max(moments) if moments else None


def user_for_review(*, actor: User, user_id: UUID) -> User | None:
    """One user `actor` administers (as users_listed lists them), with their tenant; None
    for another tenant's, an API key's account, one being erased or an unknown id."""
    return (
        User.objects.select_related("tenant")
        .filter(
            administered_by(actor),
            id=user_id,
            erasure_started_at__isnull=True,
            api_key__isnull=True,
        )
        .first()
    )


def _narrowed(memories: QuerySet, filters: Mapping[str, Any], *, via: str = "") -> QuerySet:
    """Memories (or revisions, through `via` "memory__") of one scope, project or topic when
    the filters name one (empty values and missing fields do not narrow)."""
    if filters.get("scope"):
        memories = memories.filter(**{f"{via}scope": filters["scope"]})
    for name in ("project", "topic"):
        if filters.get(name):
            memories = memories.filter(**{f"{via}{name}": filters[name]})
    return memories


def user_memories(*, user: User, filters: Mapping[str, Any]) -> QuerySet[Memory]:
    """The memories of `user` (every scope they are in: their own, projects, conversations,
    personas' user memories) that the page shows, by category (the uncategorised last), the
    pinned first, then the most important: the current ones (active, not replaced, not
    expired) unless filters["status"] asks for pending_review, archived or deleted ones;
    narrowed by scope, project and topic. With their carriers, source and entities."""
    memories = Memory.objects.filter(user=user)
    status = filters.get("status") or CURRENT
    if status == CURRENT:
        memories = memories.filter(current_memories(), unexpired(timezone.now()))
    elif status == DELETED:
        memories = memories.filter(deleted_at__isnull=False)
    else:
        memories = memories.filter(status=status, deleted_at__isnull=True)
    return (
        _narrowed(memories, filters)
        .select_related("persona", "project", "topic", "source_topic", "source_work_session")
        .prefetch_related("entities")
        .order_by(
            Case(When(category="", then=Value(1)), default=Value(0)),
            "category",
            "-pinned",
            "-importance",
            "-updated_at",
            "id",
        )
    )


@dataclass
class MemoryGroup:
    label: str
    memories: list[Memory]


def grouped(memories: Sequence[Memory], by: str) -> list[MemoryGroup]:
    """A page's memories in groups, in the page's order within each: by category (as
    ordered, the uncategorised last), by entity (a memory under each person or thing it is
    about, groups by name, "about no one" last), or pinned and not pinned."""
    groups: dict[str, list[Memory]] = {}
    if by == "entity":
        about_no_one = []
        for memory in memories:
            entities = list(memory.entities.all())  # prefetched
            if not entities:
                about_no_one.append(memory)
            for entity in entities:
                label = f"{entity.name} ({entity.relation})" if entity.relation else entity.name
                groups.setdefault(label, []).append(memory)
        ordered = [MemoryGroup(label, groups[label]) for label in sorted(groups, key=str.casefold)]
        return ordered + ([MemoryGroup("about no one", about_no_one)] if about_no_one else [])
    if by == "pinned":
        pinned = [memory for memory in memories if memory.pinned]
        others = [memory for memory in memories if not memory.pinned]
        return [
            group
            for group in (MemoryGroup("pinned", pinned), MemoryGroup("not pinned", others))
            if group.memories
        ]
    for memory in memories:
        groups.setdefault(memory.category or "no category", []).append(memory)
    return [MemoryGroup(label, members) for label, members in groups.items()]


@dataclass
class Change:
    """One field a revision changed: its name, its value before and after."""

    field: str
    old: Any
    new: Any


@dataclass
class TimelineEntry:
    """One revision as the timeline tells it: `kind` is what happened in words ("created",
    "replaced", "updated", "expired"...), `old` and `new` the value before and after where
    the value changed (a replacement: the replaced value and the one that took its place),
    `changes` the other fields it changed."""

    revision: MemoryRevision
    kind: str
    key: str
    old: str | None = None
    new: str | None = None
    changes: tuple[Change, ...] = ()

    @property
    def memory(self) -> Memory:
        return self.revision.memory


_KINDS: dict[str, str] = {
    RevisionAction.CREATE: "created",
    RevisionAction.EDIT: "updated",
    RevisionAction.MERGE: "merged",
    RevisionAction.APPROVE: "approved",
    RevisionAction.REJECT: "rejected",
    RevisionAction.ARCHIVE: "archived",
    RevisionAction.DELETE: "deleted",
    RevisionAction.RESTORE: "restored",
    RevisionAction.IMPORT: "imported",
    RevisionAction.EXPIRE: "expired",
}


def user_timeline(
    *, user: User, filters: Mapping[str, Any], limit: int, memory_id: UUID | None = None
) -> list[TimelineEntry]:
    """The last `limit` changes to the memories of `user` (of one memory with memory_id: its
    history), newest first, narrowed by scope, project and topic as the memories are (not by
    status: the timeline is what happened, whatever the memories' status is now).

    A memory archived because another took its key is told as "replaced", with the value it
    had and the value of the memory that replaced it as that one was then (its revision just
    before the archival: one more query for all the replacements shown)."""
    revisions = MemoryRevision.objects.filter(memory__user=user)
    if memory_id is not None:
        revisions = revisions.filter(memory_id=memory_id)
    rows = list(
        _narrowed(revisions, filters, via="memory__")
        .select_related("memory", "actor")
        .order_by("-id")[:limit]
    )
    replacements = _replacement_values(rows)
    return [_entry(revision, replacements) for revision in rows]


def _replaced_by(revision: MemoryRevision) -> str | None:
    """The id of the memory that replaced this revision's memory, if the revision is that
    replacement's archival."""
    if revision.action != RevisionAction.ARCHIVE or not revision.after:
        return None
    new_id = revision.after.get("superseded_by_id")
    old_id = (revision.before or {}).get("superseded_by_id")
    return new_id if new_id and new_id != old_id else None


def _replacement_values(rows: list[MemoryRevision]) -> dict[int, str]:
    """For each replacement's archival among `rows` (by revision id), the value of the
    memory that replaced it as its last revision before the archival left it."""
    wanted = {row.id: _replaced_by(row) for row in rows}
    wanted = {row_id: new_id for row_id, new_id in wanted.items() if new_id}
    if not wanted:
        return {}
    earlier = (
        MemoryRevision.objects.filter(memory_id__in=set(wanted.values()), id__lt=max(wanted))
        .order_by("id")
        .values_list("id", "memory_id", "after")
    )
    found: dict[int, str] = {}
    for revision_id, memory_id, after in earlier:
        for archival_id, new_id in wanted.items():
            if str(memory_id) == new_id and revision_id < archival_id and after:
                found[archival_id] = after.get("value", "")  # the latest before wins
    return found


def _entry(revision: MemoryRevision, replacements: Mapping[int, str]) -> TimelineEntry:
    before, after = revision.before or {}, revision.after or {}
    key = after.get("key") or before.get("key") or revision.memory.key
    kind = _KINDS.get(revision.action, revision.action)
    if revision.action == RevisionAction.CREATE and after.get("status") == Status.PENDING_REVIEW:
        kind = "proposed"
    if _replaced_by(revision):
        return TimelineEntry(
            revision,
            kind="replaced",
            key=key,
            old=before.get("value"),
            new=replacements.get(revision.id),
        )
    if not before:
        return TimelineEntry(revision, kind=kind, key=key, new=after.get("value"))
    changes = tuple(
        Change(name, before.get(name), after.get(name))
        for name in SHOWN_FIELDS
        if name != "value" and before.get(name) != after.get(name)
    )
    if before.get("value") != after.get("value"):
        return TimelineEntry(
            revision,
            kind=kind,
            key=key,
            old=before.get("value"),
            new=after.get("value"),
            changes=changes,
        )
    return TimelineEntry(revision, kind=kind, key=key, changes=changes)
