"""Reads, already limited to what the caller may see: someone else's memory is not found."""

from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.db.models import Count, Q, QuerySet

from memories.carriers import owned_carriers
from memories.errors import NotFound
from memories.models import (
    DEFAULT_TENANT_SLUG,
    Memory,
    MemoryRevision,
    Message,
    Persona,
    Scope,
    Status,
    Topic,
    User,
    WorkSession,
    WorkSessionMessage,
)


def administered_by(actor: User, *, via: str = "") -> Q:
    """The users whose data staff `actor` administers (review, users, runs), as a condition
    on the users reached through `via` ("user__" from a memory): everyone for a local staff
    login; for an API key's account, its tenant's end users only."""
    if actor.tenant_id is None:
        return Q()
    return Q(**{f"{via}tenant_id": actor.tenant_id, f"{via}external_id__isnull": False})


def persona_reach(user: User, *, via: str = "") -> Q:
    """The personas `user` may talk to and, as staff, administer, as a condition on the
    persona reached through `via` ("persona__" from a memory): their tenant's; every one for
    a local staff login; the default tenant's for a local login that is not staff (an
    installation serving one product)."""
    if user.tenant_id is not None:
        return Q(**{f"{via}tenant_id": user.tenant_id})
    if user.is_staff:
        return Q()
    return Q(**{f"{via}tenant__slug": DEFAULT_TENANT_SLUG})


def personas_of(user: User) -> QuerySet[Persona]:
    """The personas `user` reaches (persona_reach); another tenant's are not found."""
    return Persona.objects.filter(persona_reach(user))


def persona_reachable(user: User, persona: Persona) -> bool:
    """Whether `user` reaches this persona: the check of a persona met through a topic."""
    if user.tenant_id is not None:
        return persona.tenant_id == user.tenant_id
    return user.is_staff or personas_of(user).filter(id=persona.id).exists()


def changeable_by(user: User) -> Q:
    """Their own user, project, session and persona_user memories; staff also persona ones
    of the personas they reach (their tenant's)."""
    condition = Q(user=user) & ~Q(scope=Scope.PERSONA)
    if user.is_staff:
        condition |= Q(scope=Scope.PERSONA) & persona_reach(user, via="persona__")
    return condition


def memories_administered_by(actor: User) -> Q:
    """The memories staff `actor` administers (review, admin lists): those of the users it
    administers (administered_by) and of the personas it reaches; all for a local login."""
    if actor.tenant_id is None:
        return Q()
    return (Q(user__isnull=False) & administered_by(actor, via="user__")) | (
        Q(scope=Scope.PERSONA) & persona_reach(actor, via="persona__")
    )


def memories_visible_to(user: User) -> QuerySet[Memory]:
    """Live (not deleted) memories the user may read and change."""
    return Memory.objects.filter(changeable_by(user), deleted_at__isnull=True)


def memory_get(*, user: User, memory_id: UUID) -> Memory:
    """One visible memory. Someone else's answers NotFound, so its existence does not leak."""
    memory = memories_visible_to(user).filter(id=memory_id).first()
    if memory is None:
        raise NotFound("No memory with this id.", field="id")
    return memory


def memory_history(*, user: User, memory_id: UUID) -> QuerySet[MemoryRevision]:
    """Revisions newest first; also for a deleted memory of the caller, as an audit trail."""
    if not Memory.objects.filter(changeable_by(user), id=memory_id).exists():
        raise NotFound("No memory with this id.", field="id")
    return MemoryRevision.objects.filter(memory_id=memory_id).order_by("-id")


def memory_counts(*, user: User) -> dict[str, int]:
    counts = memories_visible_to(user).aggregate(
        active=Count("id", filter=Q(status=Status.ACTIVE)),
        pending=Count("id", filter=Q(status=Status.PENDING_REVIEW)),
    )
    return {"active": counts["active"], "pending": counts["pending"]}


def pending_memories(*, actor: User | None = None) -> QuerySet[Memory]:
    """Pending memories of every user staff `actor` administers (of everyone without an
    actor: the metrics), newest first."""
    administered = Q() if actor is None else memories_administered_by(actor)
    return Memory.objects.filter(
        administered, status=Status.PENDING_REVIEW, deleted_at__isnull=True
    ).order_by("-created_at", "-id")


def topic_get(*, user: User, topic_id: UUID, field: str = "topic_id") -> Topic:
    topic = owned_carriers("topic", user).filter(id=topic_id).first()
    if topic is None:
        raise NotFound("No topic with this id.", field=field)
    return topic


def work_session_get(*, user: User, session_id: UUID, field: str = "id") -> WorkSession:
    session = WorkSession.objects.filter(id=session_id, user=user).first()
    if session is None:
        raise NotFound("No work session with this id.", field=field)
    return session


def persona_get(*, user: User, persona_id: UUID, field: str = "persona_id") -> Persona:
    """A persona `user` reaches. Another tenant's answers NotFound, as an unknown id does."""
    persona = personas_of(user).filter(id=persona_id).first()
    if persona is None:
        raise NotFound("No persona with this id.", field=field)
    return persona


# A similar memory this far above ordinary ones (calibrated, below) is shown as "close": in
# measured pairs, restatements of one fact and a key's other values ("Lives in Lisbon",
# "Lives in Porto") scored 4 to 9, facts on unrelated subjects never above 3.3
# (docs/extraction.md, "Similar memories").
SIMILAR_CLOSE = 4.0


@dataclass(frozen=True)
class SimilarMemory:
    memory: Memory
    # Calibrated as recall calibrates (memories.recall.calibration): how many standard
    # deviations the memories' similarity lies above the candidate's similarity to ordinary
    # memories of nobody in particular.
    similarity: float

    @property
    def closeness(self) -> str:
        """The word the pages show: "close" (a restatement or another value of the same
        fact) or "related"."""
        return "close" if self.similarity >= SIMILAR_CLOSE else "related"


def similar_memories(
    memories: list[Memory], *, k: int = 3, min_similarity: float | None = None
) -> dict[UUID, list[SimilarMemory]]:
    """For each memory, the user's most similar live active memories, by stored vector, in
    its own scope and the user's general scope, with their similarity calibrated as recall
    calibrates a question's (the memory plays the question): those at least min_similarity
    (REVIEW_SIMILAR_MIN_CALIBRATED by default) above ordinary memories. Raw cosines say
    little (the default model puts any two memories 0.75-0.85 apart). Without an embedder
    nothing is measured and none is listed.
    The memory a candidate proposes to replace is shown beside it already, so it is left out."""
    from memories.recall.calibration import calibrate
    from memories.recall.vector_store import get_vector_store, partition_key, partition_of

    if min_similarity is None:
        min_similarity = settings.REVIEW_SIMILAR_MIN_CALIBRATED
    store = get_vector_store()
    neighbours: dict[UUID, list[tuple[UUID, float]]] = {}
    vectors = store.vectors_of(memory_ids=[memory.id for memory in memories])
    for memory in memories:
        vector = vectors.get(memory.id)
        calibration = calibrate(vector) if vector is not None else None
        if vector is None or calibration is None:
            neighbours[memory.id] = []
            continue
        partitions = {partition_of(memory)}
        if memory.user_id:
            partitions.add(partition_key(scope=Scope.USER, user_id=memory.user_id))
        hits = store.nearest(
            vector=vector, partitions=sorted(partitions), k=k + 1, status=Status.ACTIVE
        )
        shown = {memory.id, memory.supersedes_id}
        calibrated = [(h.memory_id, calibration.of(h.similarity)) for h in hits]
        neighbours[memory.id] = [
            (memory_id, similarity)
            for memory_id, similarity in calibrated
            if memory_id not in shown and similarity >= min_similarity
        ][:k]
    wanted = {memory_id for hits in neighbours.values() for memory_id, _ in hits}
    found = Memory.objects.filter(id__in=wanted, deleted_at__isnull=True).in_bulk()
    return {
        memory_id: [
            SimilarMemory(found[other_id], similarity)
            for other_id, similarity in hits
            if other_id in found
        ]
        for memory_id, hits in neighbours.items()
    }


def memory_status_counts(*, actor: User) -> dict[str, int]:
    """Live memories that staff `actor` administers, by status (the review dashboard)."""
    counts = Memory.objects.filter(
        memories_administered_by(actor), deleted_at__isnull=True
    ).aggregate(
        active=Count("id", filter=Q(status=Status.ACTIVE)),
        pending=Count("id", filter=Q(status=Status.PENDING_REVIEW)),
        archived=Count("id", filter=Q(status=Status.ARCHIVED)),
    )
    return counts


def cited_messages(memories: list[Memory]) -> dict:
    """For each memory, the messages of its source (topic or work session) that its
    provenance cites, in order: two queries at most, whatever the number of memories."""
    wanted: dict[str, set[int]] = {"topic": set(), "work_session": set()}
    for memory in memories:
        kind = "topic" if memory.source_topic_id else "work_session"
        if memory.source_topic_id or memory.source_work_session_id:
            wanted[kind].update(memory.source_message_ids)
    found: dict[tuple[str, UUID | None, int], Message | WorkSessionMessage] = {}
    if wanted["topic"]:
        for message in Message.objects.filter(id__in=wanted["topic"]):
            found[("topic", message.topic_id, message.id)] = message
    if wanted["work_session"]:
        for work_message in WorkSessionMessage.objects.filter(id__in=wanted["work_session"]):
            found[("work_session", work_message.session_id, work_message.id)] = work_message
    cited = {}
    for memory in memories:
        source: tuple[str, UUID | None]
        if memory.source_topic_id:
            source = ("topic", memory.source_topic_id)
        else:
            source = ("work_session", memory.source_work_session_id)
        keys = (source + (message_id,) for message_id in sorted(memory.source_message_ids))
        cited[memory.id] = [found[key] for key in keys if key in found]
    return cited
