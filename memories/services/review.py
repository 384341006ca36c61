"""Review: approval and rejection of proposed memories, archiving and merging."""

from collections.abc import Iterable, Sequence
from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memories.errors import Conflict, InvalidInput
from memories.fact_keys import current_holders, fact_group, lock_fact_keys
from memories.models import (
    Memory,
    RevisionAction,
    Status,
    User,
)
from memories.recall.index import (
    index_memory,
    index_status,
)
from memories.recall.vector_store import partition_of
from memories.retention.expiry import retention_refresh_written
from memories.services.revisions import EDITABLE_FIELDS, clamp_unit, record_revision, snapshot
from webhooks.events import memory_superseded


def _transition(
    *, memory_id: UUID, actor: User | None, to_status: str, action: str
) -> Memory | None:
    """Move a pending memory to `to_status`; None when it is not pending (any more).
    Approving a replacement archives what it replaces (_replaced_on_approval). Raises
    Conflict, before writing anything, when that cannot be decided.

    The memory is locked before what it replaces (memory_update locks it first too, so
    approvals along a chain take their locks in one order). The conditional UPDATE ...
    WHERE status = pending makes two concurrent approvals of the same memory count once: the
    second one updates no row.
    """
    memory = (
        Memory.objects.select_for_update()
        .filter(id=memory_id, status=Status.PENDING_REVIEW, deleted_at__isnull=True)
        .first()
    )
    if memory is None:
        return None
    before = snapshot(memory)
    replaced: list[UUID] = []
    note = ""
    if to_status == Status.ACTIVE and memory.supersedes_id:
        replaced, memory.supersedes_id, note = _replaced_on_approval(memory)
    elif to_status == Status.ACTIVE:
        # A key names one fact: a proposal whose key someone saved since it was proposed
        # replaces that memory when approved, as a save of the key would.
        lock_fact_keys([fact_group(memory)])
        replaced = list(
            current_holders(fact_group(memory)).select_for_update().values_list("id", flat=True)
        )
        if replaced:
            memory.supersedes_id = replaced[-1]
            note = f"replaces {', '.join(map(str, replaced))}, which had this key"[:200]
    memory.status, memory.updated_at = to_status, timezone.now()
    if to_status == Status.ACTIVE:
        # Current from its approval: until then the memory it replaces was.
        memory.valid_from = memory.updated_at
    updated = Memory.objects.filter(
        id=memory_id, status=Status.PENDING_REVIEW, deleted_at__isnull=True
    ).update(
        status=to_status,
        updated_at=memory.updated_at,
        supersedes_id=memory.supersedes_id,
        valid_from=memory.valid_from,
    )
    if not updated:
        return None
    record_revision(memory, action=action, actor=actor, before=before, note=note)
    index_status([memory.id], to_status)
    for old_id in replaced:
        memory_archive(
            memory_id=old_id,
            actor=actor,
            note=f"superseded by {memory.id}",
            superseded_by=memory,
            at=memory.valid_from,
        )
    memory_superseded(memory, replaced)
    return memory


def _replaced_on_approval(memory: Memory) -> tuple[list[UUID], UUID | None, str]:
    """What approving the replacement `memory` archives, what it supersedes then, and a note
    for its approval revision. Raises Conflict.

    It replaces the memory it supersedes while that is active, and archives the pending
    proposals on the way there (older proposals for the same fact). When the chain ends in a
    memory no longer active (another replacement of it was approved first, or it was
    archived or deleted), the approval is re-targeted at the active memory that now holds
    the key in the same scope, so a chain of replacements never leaves two active memories
    for one key and scope. None holds it: nothing is replaced. Several do (written by hand,
    or before replacements were re-targeted): refused, as nobody can tell which one to
    replace.
    """
    stale: list[UUID] = []
    seen = {memory.id}
    target_id = memory.supersedes_id
    while target_id is not None and target_id not in seen:
        seen.add(target_id)
        # Locked whatever its status: approvals of replacements of one memory take turns, and
        # the later one then reads (a new statement sees what committed) the memory the
        # earlier one made active.
        target = Memory.objects.select_for_update().filter(id=target_id).first()
        if target is None or target.deleted_at is not None or target.status == Status.ARCHIVED:
            break
        if target.status == Status.ACTIVE:
            return [*stale, target.id], memory.supersedes_id, ""
        stale.append(target.id)
        target_id = target.supersedes_id
    holders = list(
        current_holders(fact_group(memory))
        .select_for_update()
        .exclude(id__in=seen)
        .order_by("-created_at")
        .values_list("id", flat=True)[:3]
    )
    if len(holders) > 1:
        raise Conflict(
            f"This memory replaces {memory.supersedes_id}, which is no longer active, and "
            f"several active memories now have its key {memory.key!r} in this scope "
            f"({', '.join(map(str, holders))}): delete the ones that are wrong and approve "
            "again, or reject this one."
        )
    if holders:
        note = (
            f"replaces {holders[0]}, which has this key now: {memory.supersedes_id} is not active"
        )
        return [*stale, holders[0]], holders[0], note
    note = f"replaces nothing: {memory.supersedes_id} is not active and no memory has this key"
    return stale, memory.supersedes_id, note


def memory_archive(
    *,
    memory_id: UUID,
    actor: User | None,
    note: str = "",
    superseded_by: Memory | None = None,
    at: datetime | None = None,
) -> bool:
    """Archive an active or pending memory (never deletes). False when already archived.
    An active memory stops being current: valid_until is set (to `at`, by default now), and
    `superseded_by` names the memory that replaced it, if one did."""
    with transaction.atomic():
        memory = (
            Memory.objects.select_for_update()
            .filter(id=memory_id, deleted_at__isnull=True)
            .exclude(status=Status.ARCHIVED)
            .first()
        )
        if memory is None:
            return False
        before = snapshot(memory)
        fields = ["status", "updated_at"]
        if memory.status == Status.ACTIVE:
            memory.valid_until = max(at or timezone.now(), memory.valid_from)
            memory.superseded_by = superseded_by
            fields += ["valid_until", "superseded_by"]
        memory.status = Status.ARCHIVED
        memory.save(update_fields=fields)
        record_revision(
            memory, action=RevisionAction.ARCHIVE, actor=actor, before=before, note=note
        )
        index_status([memory.id], Status.ARCHIVED)
    return True


def memory_merge(
    *,
    keep: Memory,
    others: Sequence[Memory],
    actor: User | None,
    changes: dict,
    vector: list[float] | None,
    note: str = "",
) -> Memory:
    """Merge active memories of one user and scope into `keep`: it takes `changes` (key,
    value, category, importance, confidence) in one "merge" revision, and each of `others`
    is archived with a revision naming the memory it went into. Nothing is deleted: every
    history stays. `vector` embeds keep's new text when that changes (embed_one, called by
    the caller outside any transaction). Raises InvalidInput, Conflict (one of them is no
    longer active, or not in keep's scope)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput("This field cannot be merged.", field=sorted(unknown)[0])
    for field in ("importance", "confidence"):
        if field in changes:
            changes[field] = clamp_unit(changes[field], field=field)
    ids = [keep.id, *(other.id for other in others)]
    with transaction.atomic():
        # Locked in id order, so two merges sharing memories take their locks in one order.
        locked = Memory.objects.select_for_update().filter(id__in=ids).order_by("id").in_bulk()
        for memory_id in ids:
            memory = locked.get(memory_id)
            if memory is None or memory.deleted_at is not None:
                raise Conflict(f"Memory {memory_id} was deleted meanwhile.")
            if memory.status != Status.ACTIVE:
                raise Conflict(f"Memory {memory_id} is {memory.status} now, not active.")
            if partition_of(memory) != partition_of(locked[keep.id]):
                raise Conflict(f"Memory {memory_id} is not of the same user and scope.")
        target = locked[keep.id]
        before = snapshot(target)
        changed = [name for name, value in changes.items() if getattr(target, name) != value]
        for name in changed:
            setattr(target, name, changes[name])
        target.save(update_fields=[*changed, "updated_at"])
        if "category" in changed:
            # A retention rule of the new category may have expired it already.
            retention_refresh_written([target])
        merged = ", ".join(str(other.id) for other in others)
        record_revision(
            target,
            action=RevisionAction.MERGE,
            actor=actor,
            before=before,
            note=(note or f"merged {merged}")[:200],
        )
        if {"key", "value"} & set(changed):
            index_memory(target, vector=vector)
        for other in others:
            memory_archive(
                memory_id=other.id,
                actor=actor,
                note=f"merged into {target.id}",
                superseded_by=target,
            )
    return target


# A review decision, named as its revision, and the status it moves a pending memory to.
REVIEW_OUTCOMES: dict[str, tuple[str, str]] = {
    RevisionAction.APPROVE: (Status.ACTIVE, "approved"),
    RevisionAction.REJECT: (Status.ARCHIVED, "rejected"),
}


@transaction.atomic
def memory_review(
    *,
    memory_ids: Iterable[UUID],
    actor: User | None,
    decision: str,
    require_pending: bool = False,
) -> list[Memory]:
    """Approve ("approve": pending_review -> active, archiving what each supersedes) or
    reject ("reject": -> archived) the pending memories among memory_ids; the others are
    skipped, as are replacements whose approval is refused (see _replaced_on_approval).
    Returns the memories it changed, in the order given. With require_pending a memory that
    is not pending, or whose approval is refused, raises Conflict and nothing changes.
    Raises InvalidInput (unknown decision), Conflict."""
    if decision not in REVIEW_OUTCOMES:
        raise InvalidInput("The decision is approve or reject.", field="decision")
    to_status, done = REVIEW_OUTCOMES[decision]
    changed = []
    for memory_id in dict.fromkeys(memory_ids):
        try:
            memory = _transition(
                memory_id=memory_id, actor=actor, to_status=to_status, action=decision
            )
        except Conflict:
            if require_pending:
                raise
            continue  # raised before it wrote: the memory stays pending, the others go on
        if memory is not None:
            changed.append(memory)
        elif require_pending:
            status = (
                Memory.objects.filter(id=memory_id, deleted_at__isnull=True)
                .values_list("status", flat=True)
                .first()
            )
            raise Conflict(
                f"Only pending_review memories can be {done}; this one is {status or 'deleted'}."
            )
    return changed
