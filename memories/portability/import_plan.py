"""Classifying a chunk of an import against the caller's memories: which lines create, update
or leave a memory as it is, and which current memories a created line supersedes
(memories/portability/importing.py)."""

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from uuid import UUID, uuid4

from memories.carriers import owned_carriers
from memories.fact_keys import FactGroup, current_in_scope
from memories.models import (
    CarrierIds,
    Memory,
    Scope,
    Status,
    User,
    normalise,
)
from memories.portability.import_lines import (
    CONTENT_FIELDS,
    ChunkOutcome,
    ImportLine,
    ImportRun,
    LineError,
    Plan,
)
from memories.selectors import changeable_by, personas_of
from memories.services import (
    clamp_unit,
)

# --- Classification ----------------------------------------------------------------------------


def _plain(part):
    # str() turns a Scope or Status member into its plain value, as read from the database.
    # A dict (metadata) as its canonical JSON: the same keys in any order digest alike. A
    # time (expires_at) as UTC text: the line's and the database's name UTC by other tzinfo
    # objects, whose reprs differ.
    if isinstance(part, str | UUID):
        return str(part)
    if isinstance(part, dict):
        return json.dumps(part, sort_keys=True)
    if isinstance(part, datetime):
        return part.astimezone(UTC).isoformat()
    return part


def _digest(*parts) -> bytes:
    plain = [_plain(part) for part in parts]
    return hashlib.blake2b(repr(plain).encode(), digest_size=16).digest()


def line_identity(line: ImportLine, actor: User) -> CarrierIds:
    """Where the line's memory sits: persona scope has no user, every other is the caller's."""
    user_id = None if line.scope == Scope.PERSONA else actor.id
    return CarrierIds(line.scope, user_id, line.persona_id, line.project_id, line.topic_id)


@dataclass(frozen=True)
class _PlannedMemory:
    """A memory as an import compares it, mostly in digests so a dry run can hold 100,000
    of them (the key and value are kept: a later line of the same fact keeps their
    spelling)."""

    identity: CarrierIds
    content: bytes  # identity, key and value: what a line without id is matched by
    state: bytes  # the content fields and whether the memory is deleted
    text: bytes  # what its vector is computed from
    is_deleted: bool
    key: str
    value: str


class Planned:
    """The memories earlier lines of the run create or change, by id and by content."""

    def __init__(self) -> None:
        self.by_id: dict[UUID, _PlannedMemory] = {}
        self.by_content: dict[bytes, UUID] = {}

    def add(self, memory_id: UUID, memory: _PlannedMemory) -> None:
        self.by_id[memory_id] = memory
        self.by_content.setdefault(memory.content, memory_id)


def planned_memory(source: Memory | ImportLine, identity: CarrierIds) -> _PlannedMemory:
    is_deleted = source.deleted_at is not None
    return _PlannedMemory(
        identity=identity,
        content=_digest(*identity, normalise(source.key), normalise(source.value)),
        state=_digest(*(getattr(source, name) for name in CONTENT_FIELDS), is_deleted),
        text=_digest(source.key, source.value),
        is_deleted=is_deleted,
        key=source.key,
        value=source.value,
    )


def plan_chunk(lines: list[ImportLine], *, actor: User, planned: Planned) -> ChunkOutcome:
    """Decide, line by line, what importing the chunk does."""
    outcome = ChunkOutcome()
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
    mine_by_content = existing_by_content(lines, actor=actor)

    for line in lines:
        identity = line_identity(line, actor)
        target = planned_memory(line, identity)
        current: _PlannedMemory | None = None
        if line.id is not None:
            memory_id = line.id
            if memory_id in planned.by_id:
                current = planned.by_id[memory_id]
            elif memory_id in mine_by_id:
                memory = mine_by_id[memory_id]
                current = planned_memory(memory, memory.carrier_ids())
        elif target.content in planned.by_content:
            memory_id = planned.by_content[target.content]
            current = planned.by_id[memory_id]
            line = replace(line, key=current.key, value=current.value)
            target = planned_memory(line, identity)
        else:
            # A memory that an earlier line changes is in planned.by_content if it still has
            # this content: the database's version of it does not count.
            found = [
                memory
                for memory in mine_by_content.get(target.content, [])
                if memory.id not in planned.by_id
            ]
            if found:
                memory_id, current = found[0].id, planned_memory(found[0], identity)
                # The same fact: the memory keeps its own spelling of it.
                line = replace(line, key=found[0].key, value=found[0].value)
                target = planned_memory(line, identity)
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
            outcome.plans.append(Plan(line, memory_id, "create", needs_vector, identity))
        else:
            outcome.updated += 1
            outcome.plans.append(Plan(line, memory_id, "update", needs_vector, identity))
    return outcome


def count_superseded(outcome: ChunkOutcome, *, planned: Planned, run: ImportRun) -> int:
    """A dry run's count of the current memories the chunk's created lines would supersede
    (a real import counts what its write superseded)."""
    holders = superseded_holders(outcome.plans, exclude=run.file_ids | set(planned.by_id))
    fresh = {memory_id for ids in holders.values() for memory_id in ids} - run.superseded
    run.superseded |= fresh
    return len(fresh)


def _is_current(line: ImportLine) -> bool:
    return line.status == Status.ACTIVE and line.deleted_at is None and line.valid_until is None


def line_group(line: ImportLine, identity: CarrierIds) -> FactGroup:
    return FactGroup(*identity, normalise(line.key))


def superseded_holders(plans: list[Plan], *, exclude: set[UUID]) -> dict[UUID, list[UUID]]:
    """For each created line that is current, by its memory's id: the current memories
    holding its key in its scope, apart from `exclude` (the file's own)."""
    creating = {
        plan.memory_id: line_group(plan.line, plan.identity)
        for plan in plans
        if plan.action == "create" and _is_current(plan.line)
    }
    if not creating:
        return {}
    by_identity: dict[CarrierIds, set[str]] = {}
    for group in creating.values():
        by_identity.setdefault(group.carriers, set()).add(group.key_normalised)
    holders: dict[FactGroup, list[UUID]] = {}
    for identity, keys in by_identity.items():
        rows = (
            current_in_scope(identity)
            .filter(key_normalised__in=keys)
            .exclude(id__in=exclude)
            .order_by("created_at", "id")
            .values_list("id", "key_normalised")
        )
        for memory_id, key in rows:
            holders.setdefault(FactGroup(*identity, key), []).append(memory_id)
    return {memory_id: holders.get(group, []) for memory_id, group in creating.items()}


def _moved_error(line: ImportLine, identity: CarrierIds) -> LineError:
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
    """The lines whose carriers the caller may use: their own projects and topics, their
    tenant's personas, persona scope for staff only (as POST /api/memories)."""
    project_ids = {line.project_id for line in lines if line.project_id}
    topic_ids = {line.topic_id for line in lines if line.topic_id}
    persona_ids = {line.persona_id for line in lines if line.persona_id}
    projects = set(
        owned_carriers("project", actor).filter(id__in=project_ids).values_list("id", flat=True)
        if project_ids
        else ()
    )
    topics = set(
        owned_carriers("topic", actor).filter(id__in=topic_ids).values_list("id", flat=True)
        if topic_ids
        else ()
    )
    personas = set(
        personas_of(actor).filter(id__in=persona_ids).values_list("id", flat=True)
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


def existing_by_content(lines: list[ImportLine], *, actor: User) -> dict[bytes, list[Memory]]:
    """The caller's memories with the key and value of a line without id (as
    memories.models.normalise compares them), by content; live ones first, then the oldest."""
    lines = [line for line in lines if line.id is None]
    if not lines:
        return {}
    memories = Memory.objects.filter(
        changeable_by(actor), key_normalised__in={normalise(line.key) for line in lines}
    )
    found: dict[bytes, list[Memory]] = {}
    for memory in sorted(memories, key=lambda m: (m.deleted_at is not None, m.created_at, m.id)):
        content = planned_memory(memory, memory.carrier_ids()).content
        found.setdefault(content, []).append(memory)
    return found
