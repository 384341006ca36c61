"""Every write to memories and their scope carriers. Each service is one transaction;
embedding (slow I/O) happens before the transaction opens."""

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from memories.embedders import embed_one
from memories.errors import Conflict, Forbidden, InvalidInput, NotFound
from memories.fact_keys import current_holders, fact_group, lock_fact_keys
from memories.models import (
    CARRIERS,
    SCOPE_CARRIERS,
    Memory,
    MemoryRevision,
    Message,
    MessageRole,
    Persona,
    Project,
    RevisionAction,
    Scope,
    Source,
    Status,
    Topic,
    User,
    WorkSession,
    WorkSessionMessage,
)
from memories.recall.index import (
    index_memory,
    index_status,
    unindex_memories,
)
from memories.recall.vector_store import partition_of
from memories.selectors import changeable_by

EDITABLE_FIELDS = ("key", "value", "category", "importance", "confidence")
SNAPSHOT_FIELDS = (
    *EDITABLE_FIELDS,
    "status",
    "scope",
    "supersedes_id",
    "superseded_by_id",
    "valid_from",
    "valid_until",
)


def clamp_unit(value: float, *, field: str) -> float:
    """Clamp into 0..1; values outside are clamped, not rejected."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput("Must be a finite number.", field=field)
    return min(1.0, max(0.0, float(value)))


def snapshot(memory: Memory) -> dict:
    """The fields a revision keeps, as JSON."""
    data = {name: getattr(memory, name) for name in SNAPSHOT_FIELDS}
    for name, value in data.items():
        if isinstance(value, UUID):
            data[name] = str(value)
        elif isinstance(value, datetime):
            data[name] = value.isoformat()
    return data


def record_revision(
    memory: Memory, *, action: str, actor: User | None, before: dict | None, note: str = ""
) -> MemoryRevision:
    return MemoryRevision.objects.create(
        memory=memory,
        action=action,
        actor=actor,
        before=before,
        after=snapshot(memory),
        note=note,
    )


def _check_carriers(
    *,
    scope: str,
    user: User | None,
    persona: Persona | None,
    project: Project | None,
    topic: Topic | None,
) -> None:
    """Each scope needs exactly its carriers (SCOPE_CARRIERS); name the field that is wrong."""
    needs = SCOPE_CARRIERS[scope]
    given = {"user": user, "persona": persona, "project": project, "topic": topic}
    for name in CARRIERS:
        value, field = given[name], f"{name}_id"
        if name in needs and value is None:
            raise InvalidInput(f"Required for {scope} scope.", field=field)
        if name not in needs and value is not None:
            raise InvalidInput(f"Not allowed for {scope} scope.", field=field)
    if project is not None and user is not None and project.owner_id != user.id:
        raise InvalidInput("No such project.", field="project_id")
    if topic is not None and user is not None and topic.user_id != user.id:
        raise InvalidInput("No such topic.", field="topic_id")


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
    """An unsaved memory whose carriers fit its scope, its numbers clamped."""
    _check_carriers(scope=scope, user=user, persona=persona, project=project, topic=topic)
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
    *, memory: Memory, actor: User | None, changes: dict, approve: bool = False
) -> Memory:
    """Edit key, value, category, importance or confidence; re-embeds when the text changes.
    With approve=True the edit and the approval of a pending memory happen in one
    transaction (review: edit before approving). Raises InvalidInput, EmbedderUnavailable,
    Conflict (deleted meanwhile, or no longer pending when approving)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput("This field cannot be edited.", field=sorted(unknown)[0])
    for field in ("importance", "confidence"):
        if field in changes:
            changes[field] = clamp_unit(changes[field], field=field)
    embedded_text = _text_after(memory, changes)
    vector = embed_one(embedded_text) if embedded_text != memory.embedding_text else None
    with transaction.atomic():
        locked = _lock_live(memory.id)
        if approve and locked.status != Status.PENDING_REVIEW:
            raise Conflict(
                f"Only pending_review memories can be approved; this one is {locked.status}."
            )
        before = snapshot(locked)
        changed = [name for name, value in changes.items() if getattr(locked, name) != value]
        if changed:
            for name in changed:
                setattr(locked, name, changes[name])
            locked.save(update_fields=[*changed, "updated_at"])
            record_revision(locked, action=RevisionAction.EDIT, actor=actor, before=before)
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
    re-indexed, valid from now. It takes its key back: the current memories holding the key
    in its scope are superseded by it (as a new write of the key would). Raises NotFound
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
        locked.save(
            update_fields=[
                "deleted_at",
                "status",
                "valid_from",
                "valid_until",
                "superseded_by",
                "updated_at",
            ]
        )
        record_revision(locked, action=RevisionAction.RESTORE, actor=actor, before=before)
        index_memory(locked, vector=vector)
        for holder in holders:
            memory_archive(
                memory_id=holder.id,
                actor=actor,
                note=f"superseded by {locked.id} (restored)",
                superseded_by=locked,
                at=locked.valid_from,
            )
    return locked


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
    replaced, note = [], ""
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
REVIEW_OUTCOMES = {
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


def memory_record_access(*, memory_ids: Iterable[UUID]) -> list[Memory]:
    """Recall side effect: one more access and a fresh time, as a single atomic UPDATE.
    Returns the memories as stored (RETURNING: no second query to read them back).

    Persona-scope memories are shared by every user of the persona: their statistics are
    left as they are, else each user would see in them what the others recall. They are
    returned as stored, unchanged."""
    memory_ids = list(memory_ids)
    ids = [Memory._meta.pk.get_db_prep_value(memory_id, connection) for memory_id in memory_ids]
    if not ids:
        return []
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in Memory._meta.concrete_fields)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    # On PostgreSQL, when the UPDATE is a transaction of its own, its commit does not wait for
    # the WAL to reach the disk: a crash may lose the last fraction of a second of access
    # counts (never part of an update), and no search waits on the disk. (set_config with
    # is_local applies to the current transaction only, so none is set inside a larger one.)
    asynchronous_commit = (
        " FROM (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous_commit"
        if connection.vendor == "postgresql" and not connection.in_atomic_block
        else ""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(Memory._meta.db_table)} SET access_count = access_count + 1, "
            f"last_accessed_at = %s{asynchronous_commit} "
            f"WHERE id IN ({', '.join(['%s'] * len(ids))}) AND scope <> %s "
            f"RETURNING {columns}",
            [now, *ids, Scope.PERSONA],
        )
        rows = cursor.fetchall()
    memories = _memories_from_rows(rows)
    if len(memories) < len(ids):  # shared persona memories, or rows deleted meanwhile
        updated = {memory.id for memory in memories}
        memories += Memory.objects.filter(
            id__in=[memory_id for memory_id in memory_ids if memory_id not in updated]
        )
    return memories


def _memories_from_rows(rows) -> list[Memory]:
    """Memory instances from rows of all concrete columns in field order, converted as the
    ORM converts what it reads (a raw() queryset does the same with more set-up per call)."""
    fields = Memory._meta.concrete_fields
    converters = []
    for i, field in enumerate(fields):
        column = field.get_col(Memory._meta.db_table)
        functions = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if functions:
            converters.append((i, column, functions))
    names = [field.attname for field in fields]
    memories = []
    for row in rows:
        values = list(row)
        for i, column, functions in converters:
            for convert in functions:
                values[i] = convert(values[i], column, connection)
        memories.append(Memory.from_db(connection.alias, names, values))
    return memories


# --- Scope carriers ---------------------------------------------------------------------------


def persona_create(*, actor: User, name: str, memory_enabled: bool = True) -> Persona:
    """Create a persona (staff only). Raises Forbidden."""
    if not actor.is_staff:
        raise Forbidden("Only staff can create personas.")
    return Persona.objects.create(name=name, memory_enabled=memory_enabled)


def persona_update(*, actor: User, persona: Persona, changes: dict) -> Persona:
    """Rename a persona or switch its memory (staff only). Raises Forbidden."""
    if not actor.is_staff:
        raise Forbidden("Only staff can change personas.")
    for name, value in changes.items():
        setattr(persona, name, value)
    persona.save(update_fields=list(changes))
    return persona


def project_create(*, owner: User, name: str) -> Project:
    """Create a managed project owned by `owner`."""
    return Project.objects.create(owner=owner, name=name)


def topic_create(
    *,
    user: User,
    title: str = "",
    persona: Persona | None = None,
    project: Project | None = None,
    channel_id: UUID | None = None,
) -> Topic:
    """Create a conversation mirrored from the chat product."""
    return Topic.objects.create(
        user=user, title=title, persona=persona, project=project, channel_id=channel_id
    )


@dataclass
class PostedMessages:
    """What a post to a topic or work session wrote, and the extraction it started: what a
    MESSAGE_POSTED_HOOKS hook reported ({"task_id", "status"}), or None. The hooks run once
    the messages are committed, so `extraction` is filled by the time the service returns,
    unless the post ran inside a longer transaction (then they run at its commit)."""

    messages: list
    extraction: dict | None = None


def _message_posted(*, kind: str, source_id: UUID, posted: PostedMessages) -> None:
    """Tell the configured hooks (extraction's trigger policy) about new user messages once
    they are committed: once per post, however many messages it carried. A hook returns what
    it started ({"task_id", "status"}) or None; the first answer becomes the post's
    `extraction`. robust: a hook's failure is logged and never undoes or fails the post."""
    if not any(message.role == MessageRole.USER for message in posted.messages):
        return
    for path in settings.MESSAGE_POSTED_HOOKS:
        hook = import_string(path)

        def run_hook(hook=hook) -> None:
            reported = hook(kind=kind, source_id=source_id)
            if reported is not None and posted.extraction is None:
                posted.extraction = reported

        transaction.on_commit(run_hook, robust=True)


def _messages_append(*, parent: Topic | WorkSession, items: Sequence[dict]) -> PostedMessages:
    """Append messages in input order, in one transaction and one bulk insert (their ids
    ascend in input order), then tell the hooks once."""
    if isinstance(parent, Topic):
        kind, model, carrier = "topic", Message, {"topic": parent}
    else:
        kind, model, carrier = "work_session", WorkSessionMessage, {"session": parent}
    posted = PostedMessages(
        messages=[
            model(role=MessageRole(item["role"]), content=item["content"], **carrier)
            for item in items
        ]
    )
    with transaction.atomic():
        model.objects.bulk_create(posted.messages)
        type(parent).objects.filter(id=parent.id).update(updated_at=timezone.now())
        _message_posted(kind=kind, source_id=parent.id, posted=posted)
    return posted


def message_create(*, topic: Topic, role: str, content: str) -> Message:
    """Append a message to a topic."""
    posted = _messages_append(parent=topic, items=[{"role": role, "content": content}])
    return posted.messages[0]


def message_create_batch(*, topic: Topic, items: Sequence[dict]) -> PostedMessages:
    """Append many messages ({role, content}, as MessageSerializer validates them) to a topic,
    all or nothing, in input order; the trigger policy hears about them once. Returns them
    and the extraction the hooks started, if any."""
    return _messages_append(parent=topic, items=items)


def work_session_create(*, user: User, project: Project | None = None) -> WorkSession:
    """Create an agent work session, optionally inside a managed project."""
    return WorkSession.objects.create(user=user, project=project)


def work_session_message_create(
    *, session: WorkSession, role: str, content: str
) -> WorkSessionMessage:
    """Append a message to a work session."""
    posted = _messages_append(parent=session, items=[{"role": role, "content": content}])
    return posted.messages[0]


def work_session_message_create_batch(
    *, session: WorkSession, items: Sequence[dict]
) -> PostedMessages:
    """Append many messages to a work session, as message_create_batch does for topics."""
    return _messages_append(parent=session, items=items)
