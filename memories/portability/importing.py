"""Import: NDJSON lines (an export of this or another account) written into the caller's
memories, idempotently.

Each line is matched to a memory of the caller: by `id` when the line has one (a missing id is
created with that id, so importing the file again finds it), otherwise by scope, carriers, key
and value, compared as writes compare them (facts.normalise), so a line never writes a second
row for a fact. A matched memory is unchanged, or updated to what the line says
(key, value, category, importance, confidence, status, deleted or not; a line matched without
id keeps the memory's own spelling of key and value). A created line that is current takes
its key: the caller's current memories holding the key in its scope before the import are
superseded by it (counted as `superseded`); memories of the same file never supersede one
another, so a file keeps what it says. valid_from, valid_until and superseded_by_id come from
the line when the memory is created (a superseded_by_id naming no memory of the caller once
the import is done is cleared). Provenance (source,
source_channel_id), recall statistics (access_count, last_accessed_at) and created_at/updated_at
come from the line only when the memory is created: an older file must not roll back what this
service has counted since. supersedes_id, owner_id, user_id and external_user_id are read back
but ignored: the memories become the caller's, and a replacement proposal is not carried over;
so are source_topic_id, source_work_session_id and source_message_ids (conversations are not
imported).

Lines come from a stream and are handled in chunks of IMPORT_CHUNK_LINES: each chunk is
classified against the database, embedded in one call outside any transaction, then written in
one transaction, so a body of any size never sits in memory at once and a bad line is reported,
never half-written.
"""

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal
from uuid import UUID, uuid4

from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.embedders import get_embedder
from memories.errors import Conflict
from memories.fact_keys import FactGroup, current_in_scope, lock_fact_keys
from memories.facts import normalise
from memories.models import (
    Memory,
    Persona,
    Project,
    RevisionAction,
    Scope,
    Source,
    Status,
    Topic,
    User,
)
from memories.recall.index import index_memory, index_status, unindex_memories
from memories.selectors import changeable_by
from memories.services import (
    clamp_unit,
    memory_archive,
    record_revision,
    snapshot,
)

IMPORT_CHUNK_LINES = 500
# A file of garbage must not turn into a response of millions of error entries.
MAX_LISTED_ERRORS = 1000
# A chunk whose memories change between its classification and its write is classified again.
_CHUNK_ATTEMPTS = 3
_CONTENT_FIELDS = ("key", "value", "category", "importance", "confidence", "status")


@dataclass(frozen=True)
class LineError:
    line: int
    field: str
    detail: str


@dataclass(frozen=True)
class InvalidLine:
    """A line that is not a valid memory object; nothing of it is written."""

    number: int
    errors: list[LineError]


@dataclass(frozen=True)
class ImportLine:
    """One validated line (the export's shape): what the memory should look like."""

    number: int
    key: str
    value: str
    scope: str = Scope.USER
    id: UUID | None = None
    category: str = ""
    importance: float = 0.5
    confidence: float = 1.0
    status: str = Status.ACTIVE
    source: str = Source.MANUAL
    source_channel_id: UUID | None = None
    persona_id: UUID | None = None
    project_id: UUID | None = None
    topic_id: UUID | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    deleted_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by_id: UUID | None = None


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded: int = 0
    errors: list[LineError] = field(default_factory=list)
    unlisted_errors: int = 0  # past MAX_LISTED_ERRORS: counted, not listed
    first_unlisted_line: int | None = None

    def add_error(self, error: LineError) -> None:
        if len(self.errors) < MAX_LISTED_ERRORS:
            self.errors.append(error)
            return
        self.unlisted_errors += 1
        if self.first_unlisted_line is None:
            self.first_unlisted_line = error.line

    def listed_errors(self) -> list[LineError]:
        """The errors, and past MAX_LISTED_ERRORS one entry saying how many more there are."""
        # first_unlisted_line is set with the first unlisted error.
        if not self.unlisted_errors or self.first_unlisted_line is None:
            return self.errors
        summary = LineError(
            self.first_unlisted_line,
            "non_field_errors",
            f"{self.unlisted_errors} more errors from this line on are not listed; fix the "
            "ones above and import the file again.",
        )
        return [*self.errors, summary]


# A memory's scope and carriers: (scope, user_id, persona_id, project_id, topic_id).
Identity = tuple[str, UUID | None, UUID | None, UUID | None, UUID | None]


@dataclass(frozen=True)
class _Plan:
    line: ImportLine
    memory_id: UUID
    action: Literal["create", "update"]
    needs_vector: bool
    identity: Identity


@dataclass
class _ChunkOutcome:
    """What importing a chunk does (or, in a dry run, would do)."""

    plans: list[_Plan] = field(default_factory=list)
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded: int = 0
    errors: list[LineError] = field(default_factory=list)


class _ChunkChanged(Exception):
    """A memory of the chunk changed between classification and write: classify again."""


def memory_import(
    *, actor: User, lines: Iterable[ImportLine | InvalidLine], dry_run: bool = False
) -> ImportResult:
    """Import memories of the caller line by line (see the module's docstring for what is kept
    and how lines are matched). With dry_run nothing is written, and the counts and errors are
    those a real import would report. Raises EmbedderUnavailable, Conflict (the caller's
    memories kept changing under a chunk), BodyTooLarge (from reading `lines`)."""
    result = ImportResult()
    # In a dry run the database never sees what earlier chunks would have written, so the
    # run remembers it (as digests: a few hundred bytes a line).
    planned = _Planned()
    run = _Run()
    for chunk in _chunks(lines, IMPORT_CHUNK_LINES):
        valid = [line for line in chunk if isinstance(line, ImportLine)]
        if dry_run:
            outcome = _plan_chunk(valid, actor=actor, planned=planned)
            outcome.superseded = _count_superseded(outcome, planned=planned, run=run)
            run.file_ids.update(planned.by_id)
        else:
            outcome = _import_chunk(valid, actor=actor, run=run)
        result.created += outcome.created
        result.updated += outcome.updated
        result.unchanged += outcome.unchanged
        result.superseded += outcome.superseded
        invalid = [e for line in chunk if isinstance(line, InvalidLine) for e in line.errors]
        for error in sorted([*invalid, *outcome.errors], key=lambda e: e.line):
            result.add_error(error)
    if not dry_run:
        _clear_dangling_links(run.links, actor=actor)
    return result


@dataclass
class _Run:
    """What an import has done so far: the ids of the file's memories (created or matched,
    never superseded by another line of the file), the memories already counted as
    superseded, and the created memories that name the memory that superseded them."""

    file_ids: set[UUID] = field(default_factory=set)
    superseded: set[UUID] = field(default_factory=set)
    links: dict[UUID, UUID] = field(default_factory=dict)


def _import_chunk(lines: list[ImportLine], *, actor: User, run: _Run) -> _ChunkOutcome:
    """Classify, embed (outside the transaction) and write one chunk."""
    for _ in range(_CHUNK_ATTEMPTS):
        planned = _Planned()
        outcome = _plan_chunk(lines, actor=actor, planned=planned)
        vectors = _vectors_for(outcome.plans)
        try:
            outcome.superseded = _write_chunk(
                outcome.plans, vectors=vectors, actor=actor, run=run, chunk_ids=set(planned.by_id)
            )
        except (IntegrityError, _ChunkChanged):
            # Another request wrote these memories meanwhile (two imports of one file at
            # once: an id about to be created exists now, or a fact without id). The
            # chunk's transaction rolled back; classified again, those lines come out
            # unchanged or updated.
            continue
        run.file_ids.update(planned.by_id)
        for plan in outcome.plans:
            if plan.action == "create" and plan.line.superseded_by_id is not None:
                run.links[plan.memory_id] = plan.line.superseded_by_id
        return outcome
    raise Conflict(
        "Your memories kept changing while this file was imported; import it again (lines "
        "already imported come out unchanged)."
    )


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --- Classification ----------------------------------------------------------------------------


def _digest(*parts) -> bytes:
    # str() turns a Scope or Status member into its plain value, as read from the database.
    plain = [str(part) if isinstance(part, str | UUID) else part for part in parts]
    return hashlib.blake2b(repr(plain).encode(), digest_size=16).digest()


def _identity(*, scope, user_id, persona_id, project_id, topic_id) -> Identity:
    return (scope, user_id, persona_id, project_id, topic_id)


def _line_identity(line: ImportLine, actor: User) -> Identity:
    return _identity(
        scope=line.scope,
        user_id=None if line.scope == Scope.PERSONA else actor.id,
        persona_id=line.persona_id,
        project_id=line.project_id,
        topic_id=line.topic_id,
    )


def _memory_identity(memory: Memory) -> Identity:
    return _identity(
        scope=memory.scope,
        user_id=memory.user_id,
        persona_id=memory.persona_id,
        project_id=memory.project_id,
        topic_id=memory.topic_id,
    )


@dataclass(frozen=True)
class _PlannedMemory:
    """A memory as an import compares it, mostly in digests so a dry run can hold 100,000
    of them (the key and value are kept: a later line of the same fact keeps their
    spelling)."""

    identity: Identity
    content: bytes  # identity, key and value: what a line without id is matched by
    state: bytes  # the content fields and whether the memory is deleted
    text: bytes  # what its vector is computed from
    is_deleted: bool
    key: str
    value: str


class _Planned:
    """The memories earlier lines of the run create or change, by id and by content."""

    def __init__(self) -> None:
        self.by_id: dict[UUID, _PlannedMemory] = {}
        self.by_content: dict[bytes, UUID] = {}

    def add(self, memory_id: UUID, memory: _PlannedMemory) -> None:
        self.by_id[memory_id] = memory
        self.by_content.setdefault(memory.content, memory_id)


def _planned(source: Memory | ImportLine, identity: Identity) -> _PlannedMemory:
    is_deleted = source.deleted_at is not None
    return _PlannedMemory(
        identity=identity,
        content=_digest(*identity, normalise(source.key), normalise(source.value)),
        state=_digest(*(getattr(source, name) for name in _CONTENT_FIELDS), is_deleted),
        text=_digest(source.key, source.value),
        is_deleted=is_deleted,
        key=source.key,
        value=source.value,
    )


def _plan_chunk(lines: list[ImportLine], *, actor: User, planned: _Planned) -> _ChunkOutcome:
    """Decide, line by line, what importing the chunk does."""
    outcome = _ChunkOutcome()
    lines = [
        replace(
            line,
            importance=clamp_unit(line.importance, field="importance"),
            confidence=clamp_unit(line.confidence, field="confidence"),
        )
        for line in lines
    ]
    lines = _lines_with_carriers(lines, actor=actor, errors=outcome.errors)
    mine_by_id, others_ids = _existing_by_id(lines, actor=actor)
    # An id of someone else's memory is read as no id (matched by content, else a new
    # memory): the answer is then the one an unknown id gets, so an import cannot tell
    # whether an id exists in another account, as no other route can.
    lines = [replace(line, id=None) if line.id in others_ids else line for line in lines]
    mine_by_content = _existing_by_content(lines, actor=actor)

    for line in lines:
        identity = _line_identity(line, actor)
        target = _planned(line, identity)
        current: _PlannedMemory | None = None
        if line.id is not None:
            memory_id = line.id
            if memory_id in planned.by_id:
                current = planned.by_id[memory_id]
            elif memory_id in mine_by_id:
                memory = mine_by_id[memory_id]
                current = _planned(memory, _memory_identity(memory))
        elif target.content in planned.by_content:
            memory_id = planned.by_content[target.content]
            current = planned.by_id[memory_id]
            line = replace(line, key=current.key, value=current.value)
            target = _planned(line, identity)
        else:
            # A memory that an earlier line changes is in planned.by_content if it still has
            # this content: the database's version of it does not count.
            found = [
                memory
                for memory in mine_by_content.get(target.content, [])
                if memory.id not in planned.by_id
            ]
            if found:
                memory_id, current = found[0].id, _planned(found[0], identity)
                # The same fact: the memory keeps its own spelling of it.
                line = replace(line, key=found[0].key, value=found[0].value)
                target = _planned(line, identity)
            else:
                memory_id = uuid4()
        if current is not None and current.identity != identity:
            outcome.errors.append(_moved_error(line, current.identity))
            continue
        planned.add(memory_id, target)
        if current is not None and current.state == target.state:
            outcome.unchanged += 1
            continue
        needs_vector = not target.is_deleted and (
            current is None or current.is_deleted or current.text != target.text
        )
        if current is None:
            outcome.created += 1
            outcome.plans.append(_Plan(line, memory_id, "create", needs_vector, identity))
        else:
            outcome.updated += 1
            outcome.plans.append(_Plan(line, memory_id, "update", needs_vector, identity))
    return outcome


def _count_superseded(outcome: _ChunkOutcome, *, planned: _Planned, run: _Run) -> int:
    """A dry run's count of the current memories the chunk's created lines would supersede
    (a real import counts what its write superseded)."""
    holders = _superseded_holders(outcome.plans, exclude=run.file_ids | set(planned.by_id))
    fresh = {memory_id for ids in holders.values() for memory_id in ids} - run.superseded
    run.superseded |= fresh
    return len(fresh)


def _is_current(line: ImportLine) -> bool:
    return line.status == Status.ACTIVE and line.deleted_at is None and line.valid_until is None


def _group(line: ImportLine, identity: Identity) -> FactGroup:
    return FactGroup(*identity, normalise(line.key))


def _superseded_holders(plans: list[_Plan], *, exclude: set[UUID]) -> dict[UUID, list[UUID]]:
    """For each created line that is current, by its memory's id: the current memories
    holding its key in its scope, apart from `exclude` (the file's own)."""
    creating = {
        plan.memory_id: _group(plan.line, plan.identity)
        for plan in plans
        if plan.action == "create" and _is_current(plan.line)
    }
    if not creating:
        return {}
    by_identity: dict[Identity, set[str]] = {}
    for group in creating.values():
        by_identity.setdefault(group[:5], set()).add(group.key_normalised)
    holders: dict[FactGroup, list[UUID]] = {}
    for identity, keys in by_identity.items():
        rows = (
            current_in_scope(*identity)
            .filter(key_normalised__in=keys)
            .exclude(id__in=exclude)
            .order_by("created_at", "id")
            .values_list("id", "key_normalised")
        )
        for memory_id, key in rows:
            holders.setdefault(FactGroup(*identity, key), []).append(memory_id)
    return {memory_id: holders.get(group, []) for memory_id, group in creating.items()}


def _moved_error(line: ImportLine, identity: Identity) -> LineError:
    scope, _, persona_id, project_id, topic_id = identity
    if scope != line.scope:
        return LineError(
            line.number,
            "scope",
            f"This memory has {scope} scope; an import cannot move it to another scope.",
        )
    for name, current in (
        ("persona_id", persona_id),
        ("project_id", project_id),
        ("topic_id", topic_id),
    ):
        if current != getattr(line, name):
            return LineError(
                line.number,
                name,
                f"This memory belongs to another {name[:-3]}; an import cannot move it.",
            )
    raise AssertionError("identities differ in no field")  # pragma: no cover


def _lines_with_carriers(
    lines: list[ImportLine], *, actor: User, errors: list[LineError]
) -> list[ImportLine]:
    """The lines whose carriers the caller may use: their own projects and topics, existing
    personas, persona scope for staff only (as POST /api/memories)."""
    project_ids = {line.project_id for line in lines if line.project_id}
    topic_ids = {line.topic_id for line in lines if line.topic_id}
    persona_ids = {line.persona_id for line in lines if line.persona_id}
    projects = set(
        Project.objects.filter(owner=actor, id__in=project_ids).values_list("id", flat=True)
        if project_ids
        else ()
    )
    topics = set(
        Topic.objects.filter(user=actor, id__in=topic_ids).values_list("id", flat=True)
        if topic_ids
        else ()
    )
    personas = set(
        Persona.objects.filter(id__in=persona_ids).values_list("id", flat=True)
        if persona_ids
        else ()
    )
    kept = []
    for line in lines:
        if line.scope == Scope.PERSONA and not actor.is_staff:
            errors.append(
                LineError(line.number, "scope", "Only staff can write persona-scope memories.")
            )
        elif line.project_id and line.project_id not in projects:
            errors.append(LineError(line.number, "project_id", "No project with this id."))
        elif line.topic_id and line.topic_id not in topics:
            errors.append(LineError(line.number, "topic_id", "No topic with this id."))
        elif line.persona_id and line.persona_id not in personas:
            errors.append(LineError(line.number, "persona_id", "No persona with this id."))
        else:
            kept.append(line)
    return kept


def _existing_by_id(lines: list[ImportLine], *, actor: User) -> tuple[dict, set]:
    """The caller's memories (deleted ones too) named by the lines' ids, and the ids that name
    someone else's memory."""
    ids = {line.id for line in lines if line.id}
    if not ids:
        return {}, set()
    mine = Memory.objects.filter(changeable_by(actor), id__in=ids).in_bulk()
    others = set(
        Memory.objects.filter(id__in=ids - set(mine)).values_list("id", flat=True)
        if ids - set(mine)
        else ()
    )
    return mine, others


def _existing_by_content(lines: list[ImportLine], *, actor: User) -> dict[bytes, list[Memory]]:
    """The caller's memories with the key and value of a line without id (as
    facts.normalise compares them), by content; live ones first, then the oldest."""
    lines = [line for line in lines if line.id is None]
    if not lines:
        return {}
    memories = Memory.objects.filter(
        changeable_by(actor), key_normalised__in={normalise(line.key) for line in lines}
    )
    found: dict[bytes, list[Memory]] = {}
    for memory in sorted(memories, key=lambda m: (m.deleted_at is not None, m.created_at, m.id)):
        content = _planned(memory, _memory_identity(memory)).content
        found.setdefault(content, []).append(memory)
    return found


# --- Writing -----------------------------------------------------------------------------------


def _vectors_for(plans: list[_Plan]) -> dict[int, list[float]]:
    """Vectors of the lines that need one, by line number: one embedder call, outside any
    transaction."""
    embedder = get_embedder()
    wanted = [plan.line for plan in plans if plan.needs_vector]
    if embedder is None or not wanted:
        return {}
    texts = [Memory(key=line.key, value=line.value).embedding_text for line in wanted]
    return dict(zip([line.number for line in wanted], embedder.embed(texts), strict=True))


def _write_chunk(
    plans: list[_Plan], *, vectors: dict, actor: User, run: _Run, chunk_ids: set[UUID]
) -> int:
    """Write the chunk in one transaction, its keys locked; the number of memories its
    created lines superseded. Raises _ChunkChanged when, under the lock, a fact it is about
    to create without id exists (another import of the same file wrote it meanwhile)."""
    has_embedder = get_embedder() is not None
    with transaction.atomic():
        lock_fact_keys(_group(plan.line, plan.identity) for plan in plans)
        creating = [plan.line for plan in plans if plan.action == "create" and plan.line.id is None]
        if creating:
            found = _existing_by_content(creating, actor=actor)
            for line in creating:
                content = _planned(line, _line_identity(line, actor)).content
                if any(memory.id not in chunk_ids for memory in found.get(content, [])):
                    raise _ChunkChanged
        created = {}
        for plan in plans:
            vector = vectors.get(plan.line.number)
            if plan.action == "create":
                created[plan.memory_id] = _create(plan, vector=vector, actor=actor)
            else:
                _update(plan, vector=vector, actor=actor, has_embedder=has_embedder)
        holders = _superseded_holders(plans, exclude=run.file_ids | chunk_ids)
        superseded = 0
        for memory_id, old_ids in holders.items():
            new = created[memory_id]
            for old_id in old_ids:
                superseded += memory_archive(
                    memory_id=old_id,
                    actor=actor,
                    note=f"superseded by {new.id} (import)",
                    superseded_by=new,
                    at=new.valid_from,
                )
    return superseded


def _clear_dangling_links(links: dict[UUID, UUID], *, actor: User) -> None:
    """Clear the superseded_by_id of imported memories that name no memory of the caller
    (an export of another account, imported without its ids)."""
    targets = sorted(set(links.values()))
    existing: set[UUID] = set()
    for start in range(0, len(targets), IMPORT_CHUNK_LINES):
        batch = targets[start : start + IMPORT_CHUNK_LINES]
        existing.update(
            Memory.objects.filter(changeable_by(actor), id__in=batch).values_list("id", flat=True)
        )
    dangling = sorted(memory_id for memory_id, target in links.items() if target not in existing)
    for start in range(0, len(dangling), IMPORT_CHUNK_LINES):
        Memory.objects.filter(id__in=dangling[start : start + IMPORT_CHUNK_LINES]).update(
            superseded_by=None
        )


def _create(plan: _Plan, *, vector: list[float] | None, actor: User) -> Memory:
    line = plan.line
    now = timezone.now()
    memory = Memory(
        id=plan.memory_id,
        scope=line.scope,
        user_id=None if line.scope == Scope.PERSONA else actor.id,
        persona_id=line.persona_id,
        project_id=line.project_id,
        topic_id=line.topic_id,
        key=line.key,
        value=line.value,
        category=line.category,
        source=line.source,
        source_channel_id=line.source_channel_id,
        importance=line.importance,
        confidence=line.confidence,
        status=line.status,
        access_count=line.access_count,
        last_accessed_at=line.last_accessed_at,
        created_at=line.created_at or now,
        updated_at=line.updated_at or line.created_at or now,
        deleted_at=line.deleted_at,
        key_normalised=normalise(line.key),
        valid_from=line.valid_from or line.created_at or now,
        valid_until=line.valid_until,
        superseded_by_id=line.superseded_by_id,
    )
    # raw, as loaddata saves: auto_now(_add) would replace the line's created_at and
    # updated_at, and recency would rank every imported memory as brand new.
    memory.save_base(raw=True, force_insert=True)
    note = "imported as deleted" if line.deleted_at else ""
    record_revision(memory, action=RevisionAction.IMPORT, actor=actor, before=None, note=note)
    if line.deleted_at is None:
        index_memory(memory, vector=vector)
    return memory


def _update(plan: _Plan, *, vector: list[float] | None, actor: User, has_embedder: bool) -> None:
    line = plan.line
    # Locked: an edit, delete or restore of this memory waits for the chunk's transaction.
    memory = (
        Memory.objects.select_for_update().filter(changeable_by(actor), id=plan.memory_id).first()
    )
    if memory is None:
        raise _ChunkChanged  # erased since the chunk was classified
    was_live, is_live = memory.deleted_at is None, line.deleted_at is None
    changed = [name for name in _CONTENT_FIELDS if getattr(memory, name) != getattr(line, name)]
    text_changed = "key" in changed or "value" in changed
    if is_live and (text_changed or not was_live) and vector is None and has_embedder:
        raise _ChunkChanged  # edited since classified: the vector was not computed
    if not changed and was_live == is_live:
        return
    before = snapshot(memory)
    for name in changed:
        setattr(memory, name, getattr(line, name))
    if was_live != is_live:
        memory.deleted_at = line.deleted_at
        changed.append("deleted_at")
    memory.save(update_fields=[*changed, "updated_at"])
    note = {(True, False): "deleted by import", (False, True): "restored by import"}
    record_revision(
        memory,
        action=RevisionAction.IMPORT,
        actor=actor,
        before=before,
        note=note.get((was_live, is_live), ""),
    )
    if not is_live:
        if was_live:
            unindex_memories([memory.id])
        return
    if text_changed or not was_live:
        index_memory(memory, vector=vector)
    if was_live and "status" in changed:
        index_status([memory.id], memory.status)
