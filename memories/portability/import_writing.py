"""Writing a classified chunk of an import: the memories created and updated, with their
vectors, revisions and the holders they supersede (memories/portability/importing.py)."""

from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memories.embeddings.embedders import get_embedder
from memories.entities.linking import Mention, entities_link
from memories.fact_keys import lock_fact_keys
from memories.models import (
    Memory,
    RevisionAction,
    Scope,
    User,
    normalise,
)
from memories.models.languages import language_of
from memories.portability.import_lines import (
    CONTENT_FIELDS,
    IMPORT_CHUNK_LINES,
    ChunkChanged,
    ImportRun,
    Plan,
)
from memories.portability.import_plan import (
    existing_by_content,
    line_group,
    line_identity,
    planned_memory,
    superseded_holders,
)
from memories.recall.index import index_memory, index_new_memories, index_status, unindex_memories
from memories.retention.expiry import retention_refresh_written
from memories.selectors import changeable_by
from memories.services import (
    memory_archive,
    record_revision,
    snapshot,
)
from memories.services.pins import pinned_limit_check

# --- Writing -----------------------------------------------------------------------------------


def vectors_for(plans: list[Plan]) -> dict[int, list[float]]:
    """Vectors of the lines that need one, by line number: one embedder call, outside any
    transaction."""
    embedder = get_embedder()
    wanted = [plan.line for plan in plans if plan.needs_vector]
    if embedder is None or not wanted:
        return {}
    texts = [Memory(key=line.key, value=line.value).embedding_text for line in wanted]
    return dict(zip([line.number for line in wanted], embedder.embed(texts), strict=True))


def write_chunk(
    plans: list[Plan], *, vectors: dict, actor: User, run: ImportRun, chunk_ids: set[UUID]
) -> int:
    """Write the chunk in one transaction, its keys locked (none when it has nothing to
    write); the number of memories its created lines superseded. Raises ChunkChanged when,
    under the lock, a fact it is about to create without id exists (another import of the
    same file wrote it meanwhile)."""
    if not plans:
        return 0  # nothing to write: no transaction (on SQLite it would take the write lock)
    has_embedder = get_embedder() is not None
    with transaction.atomic():
        lock_fact_keys(line_group(plan.line, plan.identity) for plan in plans)
        creating = [plan.line for plan in plans if plan.action == "create" and plan.line.id is None]
        if creating:
            found = existing_by_content(creating, actor=actor)
            for line in creating:
                content = planned_memory(line, line_identity(line, actor)).content
                if any(memory.id not in chunk_ids for memory in found.get(content, [])):
                    raise ChunkChanged
        created = {}
        updated = []
        for plan in plans:
            vector = vectors.get(plan.line.number)
            if plan.action == "create":
                created[plan.memory_id] = _create(plan, actor=actor)
            else:
                memory = _update(plan, vector=vector, actor=actor, has_embedder=has_embedder)
                if memory is not None:
                    updated.append(memory)
        # The created memories' keyword and vector rows in a few statements, as a batch
        # create writes them: one memory at a time took ~3 ms of the transaction on SQLite
        # (~0.75 ms a memory in all now), and on SQLite the transaction holds the only write
        # lock.
        fresh = [plan for plan in plans if plan.action == "create" and plan.line.deleted_at is None]
        # A line's own id may still have index rows of a memory of that id deleted outside
        # the service (rows replaced one memory at a time before): they go first.
        if given_ids := [plan.memory_id for plan in fresh if plan.line.id is not None]:
            unindex_memories(given_ids)
        if fresh:
            index_new_memories(
                [created[plan.memory_id] for plan in fresh],
                vectors=[vectors[plan.line.number] for plan in fresh] if has_embedder else None,
            )
        # An old memory (an export's) may have expired under a retention rule already.
        retention_refresh_written([*created.values(), *updated])
        if any(plan.line.pinned for plan in plans):
            pinned_limit_check(actor)
        for plan in plans:
            if plan.line.entities:
                memory = created.get(plan.memory_id) or Memory.objects.get(id=plan.memory_id)
                entities_link(memory, [_mention(entity) for entity in plan.line.entities])
        holders = superseded_holders(plans, exclude=run.file_ids | chunk_ids)
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


def _mention(entity: dict) -> Mention:
    return Mention(entity["name"], entity.get("kind", "other"), entity.get("relation", ""))


def clear_dangling_links(links: dict[UUID, UUID], *, actor: User) -> None:
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


def _create(plan: Plan, *, actor: User) -> Memory:
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
        pinned=line.pinned,
        metadata=line.metadata,
        access_count=line.access_count,
        last_accessed_at=line.last_accessed_at,
        created_at=line.created_at or now,
        updated_at=line.updated_at or line.created_at or now,
        deleted_at=line.deleted_at,
        key_normalised=normalise(line.key),
        language=language_of(line.value),
        valid_from=line.valid_from or line.created_at or now,
        valid_until=line.valid_until,
        expires_at=line.expires_at,
        superseded_by_id=line.superseded_by_id,
    )
    # raw, as loaddata saves: auto_now(_add) would replace the line's created_at and
    # updated_at, and recency would rank every imported memory as brand new.
    memory.save_base(raw=True, force_insert=True)
    note = "imported as deleted" if line.deleted_at else ""
    record_revision(memory, action=RevisionAction.IMPORT, actor=actor, before=None, note=note)
    return memory


def _update(
    plan: Plan, *, vector: list[float] | None, actor: User, has_embedder: bool
) -> Memory | None:
    """Bring the memory to the line's content; the memory when it changed."""
    line = plan.line
    # Locked: an edit, delete or restore of this memory waits for the chunk's transaction.
    memory = (
        Memory.objects.select_for_update().filter(changeable_by(actor), id=plan.memory_id).first()
    )
    if memory is None:
        raise ChunkChanged  # erased since the chunk was classified
    was_live, is_live = memory.deleted_at is None, line.deleted_at is None
    changed = [name for name in CONTENT_FIELDS if getattr(memory, name) != getattr(line, name)]
    text_changed = "key" in changed or "value" in changed
    if is_live and (text_changed or not was_live) and vector is None and has_embedder:
        raise ChunkChanged  # edited since classified: the vector was not computed
    if not changed and was_live == is_live:
        return None
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
        return memory
    if text_changed or not was_live:
        index_memory(memory, vector=vector)
    if was_live and "status" in changed:
        index_status([memory.id], memory.status)
    return memory
