"""Saving facts by hand or by tool (POST /api/memories, its batch, memory_save): one row per
fact. A write of a key's current value answers the memory that says it; another value
replaces the key's current memories in the same transaction (unless replace=False). The
decision is facts.decide; this module embeds, locks the key and writes."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memories.embeddings.embedders import get_embedder
from memories.entities.linking import Mention, entities_link, entities_link_read
from memories.errors import Forbidden, InvalidInput, ServiceError
from memories.fact_keys import FactGroup, current_holders, fact_group, lock_fact_keys
from memories.facts import decide
from memories.filters.metadata import metadata_clean
from memories.models import (
    Memory,
    MemoryRevision,
    Persona,
    Project,
    RevisionAction,
    Scope,
    Source,
    Status,
    Topic,
    User,
)
from memories.recall.index import index_new_memories
from memories.recall.vector_store import get_vector_store, partition_of
from memories.retention.expiry import retention_refresh_written
from memories.services import (
    memory_archive,
    memory_new,
    record_revision,
    snapshot,
)
from memories.services.pins import pinned_room_check
from ops import timing
from webhooks.events import memories_created


@dataclass
class Saved:
    """The answer to one write: the memory that holds the fact now, whether the write
    created it, the current memories it replaced, and other current memories of its scope
    that are near duplicates by vector (nothing is done about those automatically)."""

    memory: Memory
    created: bool
    superseded_ids: list[UUID] = field(default_factory=list)
    # None: not looked up (a batch larger than SAVE_SIMILAR_BATCH_MAX_ITEMS).
    similar_ids: list[UUID] | None = field(default_factory=list)


@dataclass
class _Write:
    memory: Memory  # unsaved, carriers checked
    replace: bool
    vector: list[float] | None = None
    # The entities the memory is about, linked to whichever memory holds the fact; None:
    # the save named none, so they are read from the value (entities_link_read).
    mentions: tuple[Mention, ...] | None = None


def mentions_of(entities: Sequence[dict] | None) -> tuple[Mention, ...] | None:
    """The mentions a save names; None when it names none (`entities` left out), so the
    memory's own words are read ([] names none and reads nothing)."""
    if entities is None:
        return None
    return tuple(Mention(**entity) for entity in entities)


def manual_memory(
    *,
    actor: User,
    scope: str,
    key: str,
    value: str,
    category: str = "",
    importance: float = 0.5,
    confidence: float = 1.0,
    pinned: bool = False,
    metadata: dict | None = None,
    project: Project | None = None,
    persona: Persona | None = None,
    source_channel_id: UUID | None = None,
    valid_from: datetime | None = None,
    expires_at: datetime | None = None,
) -> Memory:
    """An unsaved memory written by hand: active, source manual, about the actor. Raises
    InvalidInput (session scope, a passed expires_at), Forbidden (persona scope by
    non-staff)."""
    if scope == Scope.SESSION:
        raise InvalidInput(
            "Session memories come only from extraction; use user or project.", field="scope"
        )
    if scope == Scope.PERSONA and not actor.is_staff:
        raise Forbidden("Only staff can write persona-scope memories.", field="scope")
    return memory_new(
        scope=scope,
        user=None if scope == Scope.PERSONA else actor,
        persona=persona,
        project=project,
        topic=None,
        key=key,
        value=value,
        category=category,
        importance=importance,
        confidence=confidence,
        pinned=pinned,
        metadata=metadata or {},
        source=Source.MANUAL,
        source_channel_id=source_channel_id,
        status=Status.ACTIVE,
        valid_from=valid_from or timezone.now(),
        expires_at=expires_at,
    )


def memory_save_manual(
    *, actor: User, replace: bool = True, entities: Sequence[dict] | None = None, **fields
) -> Saved:
    """A memory written by hand (POST /api/memories), fields as MemoryCreateSerializer
    validates them; `entities` ({name, kind, relation}) are linked to the memory that holds
    the fact. Raises InvalidInput, Forbidden, EmbedderUnavailable."""
    memory = manual_memory(actor=actor, **fields)
    [saved] = _save([_Write(memory, replace, mentions=mentions_of(entities))], actor=actor)
    return saved


def memory_save_manual_batch(*, actor: User, items: Sequence[dict]) -> list[Saved]:
    """Many manual writes at once, all or nothing, applied in input order (an item may
    replace or repeat an earlier one): every item is checked before anything is written (an
    error names `memories[i].field`), the texts are embedded in one batch, and everything is
    written in one transaction. Raises InvalidInput, Forbidden, EmbedderUnavailable."""
    writes = []
    for index, fields in enumerate(items):
        fields = dict(fields)
        replace = fields.pop("replace", True)
        mentions = mentions_of(fields.pop("entities", None))
        try:
            writes.append(_Write(manual_memory(actor=actor, **fields), replace, mentions=mentions))
        except ServiceError as error:
            error.field = f"memories[{index}].{error.field or 'scope'}"
            raise
    return _save(writes, actor=actor)


def memory_save_tool(
    *,
    actor: User,
    scope: str,
    key: str,
    value: str,
    category: str,
    importance: float,
    confidence: float,
    replace: bool = True,
    pinned: bool = False,
    metadata: dict | None = None,
    expires_at: datetime | None = None,
    user: User | None = None,
    persona: Persona | None = None,
    project: Project | None = None,
    topic: Topic | None = None,
) -> Saved:
    """A memory saved by a model's tool call (memory_save): active, source tool. Raises
    InvalidInput, EmbedderUnavailable."""
    memory = memory_new(
        scope=scope,
        user=user,
        persona=persona,
        project=project,
        topic=topic,
        key=key,
        value=value,
        category=category,
        importance=importance,
        confidence=confidence,
        pinned=pinned,
        metadata=metadata or {},
        source=Source.TOOL,
        status=Status.ACTIVE,
        valid_from=timezone.now(),
        expires_at=expires_at,
    )
    [saved] = _save([_Write(memory, replace)], actor=actor)
    return saved


def _save(writes: list[_Write], *, actor: User | None) -> list[Saved]:
    embedder = get_embedder()
    if embedder is not None:
        with timing.stage("embedding"):
            vectors = embedder.embed([write.memory.embedding_text for write in writes])
        for write, vector in zip(writes, vectors, strict=True):
            write.vector = vector
    # One nearest-neighbour search per item: a bulk load would spend more time here than
    # on embedding and writing together, so large batches skip it.
    look_up = len(writes) <= settings.SAVE_SIMILAR_BATCH_MAX_ITEMS
    with timing.stage("similar"):
        similar = [_near_duplicates(write) if look_up else None for write in writes]
    with timing.stage("write"), transaction.atomic():
        answers, replaced_new = _apply(writes, actor=actor)
    # Read back the memories a later item of the batch replaced (now archived).
    stored = Memory.objects.in_bulk(replaced_new) if replaced_new else {}
    for answer, near in zip(answers, similar, strict=True):
        answer.memory = stored.get(answer.memory.id, answer.memory)
        skip = {answer.memory.id, *answer.superseded_ids}
        answer.similar_ids = (
            None if near is None else [memory_id for memory_id in near if memory_id not in skip]
        )
    return answers


def _near_duplicates(write: _Write) -> list[UUID]:
    """Current memories of the write's scope at least EXTRACTION_DUPLICATE_SIMILARITY alike
    by vector, most alike first (before the write: its own row is not among them)."""
    if write.vector is None or settings.SAVE_SIMILAR_MAX <= 0:
        return []
    hits = get_vector_store().nearest_few(
        vector=write.vector,
        partitions=[partition_of(write.memory)],
        k=settings.SAVE_SIMILAR_MAX,
        status=Status.ACTIVE,
    )
    return [
        hit.memory_id for hit in hits if hit.similarity >= settings.EXTRACTION_DUPLICATE_SIMILARITY
    ]


def _apply(writes: list[_Write], *, actor: User | None) -> tuple[list[Saved], set[UUID]]:
    """Decide and write every item in order, inside the caller's transaction, with the keys
    locked and their holders read under the lock. Returns the answers, and the ids of
    memories created by an item and replaced by a later one."""
    groups = [fact_group(write.memory) for write in writes]
    lock_fact_keys(groups)
    holders: dict[FactGroup, list[Memory]] = {}
    for group in groups:
        if group not in holders:
            holders[group] = list(current_holders(group))
    answers: list[Saved] = []
    created: list[tuple[Memory, list[float] | None]] = []
    raised: dict[UUID, tuple[Memory, dict]] = {}
    replaced: list[tuple[Memory, Memory]] = []  # (old, new)
    new_ids: set[UUID] = set()
    pinning: list[Memory] = []
    for write, group in zip(writes, groups, strict=True):
        memory = write.memory
        decision = decide(
            value=memory.value,
            importance=memory.importance,
            confidence=memory.confidence,
            replace=write.replace,
            holders=holders[group],
        )
        held = decision.existing
        if held is not None:  # kind "existing": a current memory says it already
            # Like importance, a pin only rises on a save: unpinning is an edit. A save that
            # says when the fact stops being current says it for the memory holding it.
            changes: dict[str, Any] = {
                **decision.raised,
                **({"pinned": True} if memory.pinned else {}),
                **({"expires_at": memory.expires_at} if memory.expires_at else {}),
            }
            # The save's metadata merges into the held memory's: each top-level key it
            # names is set to what it gives (null included), the others kept.
            if memory.metadata:
                changes["metadata"] = metadata_clean({**held.metadata, **memory.metadata})
            changes = {
                name: value for name, value in changes.items() if getattr(held, name) != value
            }
            if changes:
                if held.id not in new_ids and held.id not in raised:
                    raised[held.id] = (held, snapshot(held))
                if changes.get("pinned"):
                    pinning.append(held)
                for name, value in changes.items():
                    setattr(held, name, value)
            answers.append(Saved(memory=held, created=False))
            continue
        if decision.superseded:
            memory.supersedes = decision.superseded[-1]
        # A pinned fact stays pinned when a save replaces its value.
        memory.pinned = memory.pinned or any(old.pinned for old in decision.superseded)
        if memory.pinned:
            pinning.append(memory)
        for old in decision.superseded:
            replaced.append((old, memory))
        holders[group] = [h for h in holders[group] if h not in decision.superseded] + [memory]
        created.append((memory, write.vector))
        new_ids.add(memory.id)
        answers.append(
            Saved(
                memory=memory,
                created=True,
                superseded_ids=[old.id for old in decision.superseded],
            )
        )
    pinned_room_check(pinning, leaving=[old.id for old, _ in replaced])
    _write_created(created, actor=actor)
    # One with an old valid_from may have expired under a retention rule already.
    retention_refresh_written([memory for memory, _ in created])
    for write, answer in zip(writes, answers, strict=True):
        if write.mentions is None:
            entities_link_read(answer.memory)
        elif write.mentions:
            entities_link(answer.memory, write.mentions)
    memories_created(
        [memory for memory, _ in created],
        {answer.memory.id: answer.superseded_ids for answer in answers if answer.created},
    )
    for held, before in raised.values():
        held.save(
            update_fields=[
                "importance",
                "confidence",
                "pinned",
                "metadata",
                "expires_at",
                "updated_at",
            ]
        )
        record_revision(
            held, action=RevisionAction.EDIT, actor=actor, before=before, note="saved again"
        )
    for old, new in replaced:
        memory_archive(
            memory_id=old.id,
            actor=actor,
            note=f"superseded by {new.id}",
            superseded_by=new,
            at=new.valid_from,
        )
    return answers, {old.id for old, _ in replaced if old.id in new_ids}


def _write_created(created: list[tuple[Memory, list[float] | None]], *, actor) -> None:
    """Insert the new memories, their create revisions and index rows in a few statements."""
    if not created:
        return
    memories = [memory for memory, _ in created]
    Memory.objects.bulk_create(memories)
    MemoryRevision.objects.bulk_create(
        MemoryRevision(
            memory=memory,
            action=RevisionAction.CREATE,
            actor=actor,
            before=None,
            after=snapshot(memory),
            note="",
        )
        for memory in memories
    )
    vectors = [vector for _, vector in created]
    index_new_memories(memories, vectors=None if vectors[0] is None else vectors)
