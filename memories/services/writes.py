"""Memory writes: create, update, delete and restore, each one transaction; embedding (slow
I/O) happens before the transaction opens."""

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memories.carriers import carrier_errors, ownership_errors
from memories.embeddings.embedders import embed_one
from memories.errors import Conflict, InvalidInput, NotFound
from memories.fact_keys import FactGroup, current_holders, fact_group, lock_fact_keys
from memories.filters.metadata import metadata_clean, metadata_merge
from memories.models import (
    Memory,
    Persona,
    Project,
    RevisionAction,
    Source,
    Status,
    Topic,
    User,
    WorkSession,
    normalise,
)
from memories.recall.index import (
    index_memory,
    unindex_memories,
)
from memories.retention.expiry import EXPIRY_PASSED, retention_refresh_written
from memories.selectors import changeable_by
from memories.services.pins import pinned_room_check
from memories.services.review import memory_archive, memory_review
from memories.services.revisions import EDITABLE_FIELDS, clamp_unit, record_revision, snapshot
from webhooks.events import memory_superseded


def _check_carriers(
    *,
    scope: str,
    user: User | None,
    persona: Persona | None,
    project: Project | None,
    topic: Topic | None,
) -> None:
    """Each scope needs exactly its carriers (memories.carriers); name the field that is wrong."""
    given = {"user": user, "persona": persona, "project": project, "topic": topic}
    errors = carrier_errors(
        scope, given=[name for name, value in given.items() if value]
    ) or ownership_errors(user, project=project, topic=topic)
    if errors:
        field, message = next(iter(errors.items()))
        raise InvalidInput(message, field=field)


def memory_create(
    *,
    actor: User | None,
    scope: str,
    key: str,
    value: str,
    user: User | None = None,
    persona: Persona | None = None,
    project: Project | None = None,
    topic: Topic | None = None,
    category: str = "",
    source: str = Source.MANUAL,
    source_channel_id: UUID | None = None,
    importance: float = 0.5,
    confidence: float = 1.0,
    status: str = Status.ACTIVE,
    supersedes: Memory | None = None,
    source_topic: Topic | None = None,
    source_work_session: WorkSession | None = None,
    source_message_ids: Sequence[int] = (),
    vector: list[float] | None = None,
    note: str = "",
) -> Memory:
    """Create a memory with its revision and vector; an extracted one with its provenance
    (the topic or work session, and the ids of its messages that say it). Raises
    InvalidInput, EmbedderUnavailable."""
    for carrier in (source_topic, source_work_session):
        if carrier is not None and carrier.user_id != getattr(user, "id", None):
            raise InvalidInput("Not a conversation of this user.", field="source")
    memory = memory_new(
        scope=scope,
        user=user,
        persona=persona,
        project=project,
        topic=topic,
        key=key,
        value=value,
        category=category,
        source=source,
        source_channel_id=source_channel_id,
        importance=importance,
        confidence=confidence,
        status=status,
        supersedes=supersedes,
        source_topic=source_topic,
        source_work_session=source_work_session,
        source_message_ids=list(source_message_ids),
    )
    if vector is None:
        vector = embed_one(memory.embedding_text)
    with transaction.atomic():
        _memory_write(memory, actor=actor, vector=vector, note=note)
    return memory


def expiry_check(expires_at: datetime | None, *, field: str = "expires_at") -> None:
    """Raises InvalidInput naming `field` when a memory would be given an expires_at that
    has passed: it would expire as it is written."""
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput(EXPIRY_PASSED, field=field)


def memory_new(
    *,
    scope: str,
    user: User | None,
    persona: Persona | None,
    project: Project | None,
    topic: Topic | None,
    importance: float,
    confidence: float,
    **fields,
) -> Memory:
    """An unsaved memory whose carriers fit its scope, its numbers clamped. Raises
    InvalidInput (carriers, a passed expires_at)."""
    _check_carriers(scope=scope, user=user, persona=persona, project=project, topic=topic)
    expiry_check(fields.get("expires_at"))
    return Memory(
        scope=scope,
        user=user,
        persona=persona,
        project=project,
        topic=topic,
        importance=clamp_unit(importance, field="importance"),
        confidence=clamp_unit(confidence, field="confidence"),
        **fields,
    )


def _memory_write(memory: Memory, *, actor: User | None, vector, note: str = "") -> None:
    """Insert the memory, its create revision and index rows (inside the caller's
    transaction)."""
    memory.save(force_insert=True)
    record_revision(memory, action=RevisionAction.CREATE, actor=actor, before=None, note=note)
    index_memory(memory, vector=vector)


def memory_update(
    *,
    memory: Memory,
    actor: User | None,
    changes: dict,
    approve: bool = False,
    merge_metadata: bool = False,
) -> Memory:
    """Edit key, value, category, importance, confidence, pinned, metadata or expires_at (a
    new one in the future; null: it does not expire); re-embeds when the text changes. With
    merge_metadata, changes["metadata"] is a JSON merge patch applied to the metadata the row
    holds under its lock (PATCH), else the new metadata (PUT).
    With approve=True the edit and the approval of a pending memory happen in one
    transaction (review: edit before approving). Raises InvalidInput, EmbedderUnavailable,
    Conflict (deleted meanwhile, or no longer pending when approving). A current memory moved
    to another key supersedes that key's current holders (docs/api.md, one row per fact)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput("This field cannot be edited.", field=sorted(unknown)[0])
    for field in ("importance", "confidence"):
        if field in changes:
            changes[field] = clamp_unit(changes[field], field=field)
    embedded_text = _text_after(memory, changes)
    vector = embed_one(embedded_text) if embedded_text != memory.embedding_text else None
    with transaction.atomic():
        if "key" in changes:
            # The key it moves to, locked as a save locks it (its carriers cannot change).
            lock_fact_keys([FactGroup(*memory.carrier_ids(), normalise(changes["key"]))])
        locked = _lock_live(memory.id)
        if merge_metadata and "metadata" in changes:
            changes["metadata"] = metadata_clean(
                metadata_merge(locked.metadata, changes["metadata"])
            )
        if changes.get("pinned") and not locked.pinned:
            pinned_room_check([locked])
        if approve and locked.status != Status.PENDING_REVIEW:
            raise Conflict(
                f"Only pending_review memories can be approved; this one is {locked.status}."
            )
        before = snapshot(locked)
        group_before = fact_group(locked)
        changed = [name for name, value in changes.items() if getattr(locked, name) != value]
        if "expires_at" in changed:
            expiry_check(changes["expires_at"])
        if changed:
            for name in changed:
                setattr(locked, name, changes[name])
            locked.save(update_fields=[*changed, "updated_at"])
            if "category" in changed:
                # A retention rule of the new category may have expired it already.
                retention_refresh_written([locked])
            record_revision(locked, action=RevisionAction.EDIT, actor=actor, before=before)
            if locked.status == Status.ACTIVE and fact_group(locked) != group_before:
                _supersede_holders(locked, actor=actor)
            if {"key", "value"} & set(changed):
                if vector is None or locked.embedding_text != embedded_text:
                    # Another edit changed the row between our read and our lock: the text
                    # written is not the one embedded above. Embedded again under the lock
                    # (rare), so the stored vector is always the stored text's.
                    vector = embed_one(locked.embedding_text)
                index_memory(locked, vector=vector)
        if approve:
            [locked] = memory_review(
                memory_ids=[locked.id],
                actor=actor,
                decision=RevisionAction.APPROVE,
                require_pending=True,
            )
    return locked


def _supersede_holders(memory: Memory, *, actor: User | None) -> list[UUID]:
    """A current memory whose key an edit changed holds that key now, as a save of it would:
    the other current memories of the key in its scope are archived, superseded by it (the key
    is locked and the memory saved in the caller's transaction)."""
    holders = list(current_holders(fact_group(memory)).exclude(id=memory.id))
    _holders_archive(memory, holders, actor=actor, why="its key was edited", at=timezone.now())
    return [holder.id for holder in holders]


def _holders_archive(
    memory: Memory, holders: list[Memory], *, actor: User | None, why: str, at: datetime
) -> None:
    """Archive `holders`, superseded by `memory` (`why`, in their notes), and say so."""
    for holder in holders:
        memory_archive(
            memory_id=holder.id,
            actor=actor,
            note=f"superseded by {memory.id} ({why})",
            superseded_by=memory,
            at=at,
        )
    memory_superseded(memory, [holder.id for holder in holders])


def _text_after(memory: Memory, changes: dict) -> str:
    return Memory(
        key=changes.get("key", memory.key), value=changes.get("value", memory.value)
    ).embedding_text


def _lock_live(memory_id: UUID) -> Memory:
    try:
        return Memory.objects.select_for_update().get(id=memory_id, deleted_at__isnull=True)
    except Memory.DoesNotExist:
        raise Conflict("This memory was deleted meanwhile.") from None


def memory_delete(*, memory: Memory, actor: User | None) -> None:
    """Soft-delete: the row stays with deleted_at set; its embedding and vector row go."""
    with transaction.atomic():
        locked = _lock_live(memory.id)
        before = snapshot(locked)
        locked.deleted_at = timezone.now()
        locked.save(update_fields=["deleted_at", "updated_at"])
        record_revision(locked, action=RevisionAction.DELETE, actor=actor, before=before)
        unindex_memories([locked.id])


def memory_restore(*, memory_id: UUID, actor: User) -> Memory:
    """Make a deleted or archived memory of the actor current again: active, re-embedded,
    re-indexed, valid from now (so its retention rules' time starts again, and an expires_at
    that has passed is cleared: it would expire it again at once). It takes its key back: the
    current memories holding the key in its scope are superseded by it (as a new write of the
    key would). Raises NotFound
    (not the actor's, or neither deleted nor archived), EmbedderUnavailable."""
    restorable = Memory.objects.filter(changeable_by(actor)).filter(
        Q(deleted_at__isnull=False) | Q(status=Status.ARCHIVED)
    )
    memory = restorable.filter(id=memory_id).first()
    if memory is None:
        raise NotFound("No deleted or archived memory of yours with this id.", field="id")
    vector = embed_one(memory.embedding_text)
    with transaction.atomic():
        lock_fact_keys([fact_group(memory)])
        # Locked and still restorable: of two concurrent restores the second finds no row.
        locked = restorable.select_for_update().filter(id=memory_id).first()
        if locked is None:
            raise NotFound("No deleted or archived memory of yours with this id.", field="id")
        holders = list(current_holders(fact_group(locked)).exclude(id=locked.id))
        before = snapshot(locked)
        locked.deleted_at = None
        locked.status = Status.ACTIVE
        locked.valid_from, locked.valid_until, locked.superseded_by = timezone.now(), None, None
        if locked.expires_at is not None and locked.expires_at <= locked.valid_from:
            locked.expires_at = None
        # Of the old valid_from: the sweep writes the time from the new one.
        locked.retention_expires_at, locked.retention_rule = None, None
        locked.save(
            update_fields=[
                "deleted_at",
                "status",
                "valid_from",
                "valid_until",
                "superseded_by",
                "expires_at",
                "retention_expires_at",
                "retention_rule",
                "updated_at",
            ]
        )
        record_revision(locked, action=RevisionAction.RESTORE, actor=actor, before=before)
        index_memory(locked, vector=vector)
        _holders_archive(locked, holders, actor=actor, why="restored", at=locked.valid_from)
    return locked
