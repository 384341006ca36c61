"""Consolidation: find what a user's memories hold twice or no longer use, and propose it for
review. Nothing changes until a reviewer approves a proposal (ConsolidationProposal):

- merge: active memories of one user and scope whose vectors are at least
  CONSOLIDATION_SIMILARITY alike, every pair of the group (at most CONSOLIDATION_MAX_GROUP
  memories). The memory updated last keeps its id and takes the proposed key and value (its
  own, unless the reviewer edits them) and the group's highest importance and confidence;
  the others are archived (memories.services.memory_merge). Every history stays.
- archive: an active memory nobody has recalled or updated for CONSOLIDATION_STALE_DAYS, and
  no more important than CONSOLIDATION_STALE_MAX_IMPORTANCE (memories.services.memory_archive).

Safe to run often and concurrently (Celery beat, manage.py consolidate_memories): a memory in a
pending proposal is not proposed again, and a proposal's fingerprint (its memories as they
were: ids and update times; for an archival also the last recall) is unique, so the same
memories, unchanged, are never proposed twice, whether the first proposal is still pending,
approved or rejected. A pending proposal whose memories changed since (edited, archived,
deleted; recalled, for an archival) is withdrawn: rejected, by nobody, saying why.
"""

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from memories import services
from memories.embeddings.embedders import embed_one
from memories.errors import Conflict, InvalidInput, NotFound
from memories.models import (
    ConsolidationProposal,
    Memory,
    ProposalKind,
    ProposalStatus,
    RevisionAction,
    Status,
    User,
)
from memories.recall.vector_store import get_vector_store, partition_of
from memories.selectors import administered_by
from webhooks.events import consolidation_proposal_created

logger = logging.getLogger(__name__)

VECTOR_BATCH = 500


@dataclass
class Proposed:
    """A proposal found by a scan, before it is saved."""

    kind: str
    user_id: UUID
    memories: list[Memory]
    reason: str
    keep: Memory | None = None
    similarity: float | None = None

    @property
    def fingerprint(self) -> str:
        def state(memory: Memory) -> str:
            seen = [memory.updated_at.isoformat()]
            if self.kind == ProposalKind.ARCHIVE:
                seen.append(memory.last_accessed_at.isoformat() if memory.last_accessed_at else "")
            return "@".join([str(memory.id), *seen])

        text = "|".join([self.kind, *sorted(state(memory) for memory in self.memories)])
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class ScanResult:
    proposed: list[Proposed] = field(default_factory=list)
    withdrawn: int = 0

    def counts(self) -> dict[str, int]:
        kinds = [proposal.kind for proposal in self.proposed]
        return {
            "merge": kinds.count(ProposalKind.MERGE),
            "archive": kinds.count(ProposalKind.ARCHIVE),
            "withdrawn": self.withdrawn,
        }


# --- Finding ---------------------------------------------------------------------------------


def consolidation_users(users: Sequence[User] | None = None) -> list[UUID]:
    """Ids of the users (of `users`, or everyone) with active memories, in a stable order."""
    live = Memory.objects.filter(status=Status.ACTIVE, deleted_at__isnull=True, user__isnull=False)
    if users is not None:
        live = live.filter(user__in=users)
    return list(live.order_by("user_id").values_list("user_id", flat=True).distinct())


def consolidation_scan(
    *,
    users: Sequence[User] | None = None,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ScanResult:
    """Propose merges and archivals of the users' memories (everyone's by default), and
    withdraw the pending proposals their memories outgrew. With dry_run nothing is written:
    the result lists what would be proposed. `progress` hears of each user done."""
    result = ScanResult()
    if not dry_run:
        result.withdrawn = _withdraw_obsolete(users)
    for user_id in consolidation_users(users):
        # The scan's time is the proposals' created_at: an edit after the memories were read
        # is then "after the proposal", and withdraws it.
        now = timezone.now()
        for proposed in _user_proposals(user_id, now=now):
            if dry_run or _save(proposed, created_at=now):
                result.proposed.append(proposed)
        if progress is not None:
            progress(1)
    logger.info("consolidation: %s", result.counts())
    return result


def _user_proposals(user_id: UUID, *, now: datetime) -> list[Proposed]:
    """What one user's active memories not yet in a pending proposal call for."""
    busy = ConsolidationProposal.memories.through.objects.filter(
        consolidationproposal__status=ProposalStatus.PENDING
    ).values("memory_id")
    memories = list(
        Memory.objects.filter(user_id=user_id, status=Status.ACTIVE, deleted_at__isnull=True)
        .exclude(id__in=busy)
        .order_by("created_at", "id")
    )
    merges = _merges(user_id, memories)
    grouped = {memory.id for proposed in merges for memory in proposed.memories}
    archivals = [
        _archival(user_id, memory)
        for memory in memories
        if memory.id not in grouped and _is_stale(memory, now=now)
    ]
    return merges + archivals


def _last_used(memory: Memory) -> datetime:
    return max(memory.updated_at, memory.last_accessed_at or memory.created_at)


def _is_stale(memory: Memory, *, now: datetime) -> bool:
    days = settings.CONSOLIDATION_STALE_DAYS
    return (
        days > 0
        and _last_used(memory) < now - timedelta(days=days)
        and memory.importance <= settings.CONSOLIDATION_STALE_MAX_IMPORTANCE
    )


def _archival(user_id: UUID, memory: Memory) -> Proposed:
    last = _last_used(memory)
    days = (timezone.now() - last).days
    return Proposed(
        kind=ProposalKind.ARCHIVE,
        user_id=user_id,
        memories=[memory],
        reason=f"not recalled or updated for {days} days (last on {last:%Y-%m-%d})",
    )


def _merges(user_id: UUID, memories: list[Memory]) -> list[Proposed]:
    """Groups of near-duplicates, each in one partition (user and scope), every pair of a
    group at least CONSOLIDATION_SIMILARITY alike: the most alike pairs first, and a memory
    joins a group only when it is that alike to each member (so a chain A~B~C whose ends
    differ does not become one group)."""
    store = get_vector_store()
    by_id = {memory.id: memory for memory in memories}
    vectors: dict = {}
    ids = list(by_id)
    for start in range(0, len(ids), VECTOR_BATCH):
        vectors.update(store.vectors_of(memory_ids=ids[start : start + VECTOR_BATCH]))
    threshold = settings.CONSOLIDATION_SIMILARITY
    similar: dict[frozenset, float] = {}
    for memory in memories:
        vector = vectors.get(memory.id)
        if vector is None:
            continue
        hits = store.nearest(
            vector=vector,
            partitions=[partition_of(memory)],
            k=settings.CONSOLIDATION_MAX_GROUP,
            status=Status.ACTIVE,
        )
        for hit in hits:
            if hit.memory_id != memory.id and hit.memory_id in by_id:
                similar[frozenset((memory.id, hit.memory_id))] = hit.similarity

    def alike(a: UUID, b: UUID) -> float:
        pair = frozenset((a, b))
        if pair not in similar:
            same_scope = partition_of(by_id[a]) == partition_of(by_id[b])
            found = store.distances(vector=vectors[a], memory_ids=[b]) if same_scope else []
            similar[pair] = found[0].similarity if found else -1.0
        return similar[pair]

    edges = sorted(
        ((value, sorted(map(str, pair)), pair) for pair, value in similar.items()),
        key=lambda edge: (-edge[0], edge[1]),
    )
    groups: dict[UUID, list[UUID]] = {}
    for value, _, pair in edges:
        if value < threshold:
            break
        a, b = sorted(pair, key=str)
        if a not in groups and b not in groups:
            groups[a] = groups[b] = [a, b]
        elif (a in groups) != (b in groups):
            group, new = (groups[a], b) if a in groups else (groups[b], a)
            if len(group) < settings.CONSOLIDATION_MAX_GROUP and all(
                alike(new, member) >= threshold for member in group
            ):
                group.append(new)
                groups[new] = group
    unique = {id(group): group for group in groups.values()}.values()
    proposals = []
    for group in unique:
        members = sorted((by_id[memory_id] for memory_id in group), key=lambda m: m.created_at)
        keep = max(members, key=lambda m: (m.updated_at, m.created_at, str(m.id)))
        lowest = min(alike(a.id, b.id) for a in members for b in members if a.id != b.id)
        proposals.append(
            Proposed(
                kind=ProposalKind.MERGE,
                user_id=user_id,
                memories=members,
                keep=keep,
                similarity=round(lowest, 4),
                reason=(
                    f"{len(members)} {keep.scope}-scope memories alike at {lowest:.2f} or more "
                    f"(CONSOLIDATION_SIMILARITY {threshold})"
                ),
            )
        )
    return proposals


def _save(proposed: Proposed, *, created_at: datetime) -> bool:
    """Save a proposal unless one with its fingerprint exists (a unique column: of two scans
    saving it at once, one inserts and the other finds it). True when saved here."""
    with transaction.atomic():
        proposal, created = ConsolidationProposal.objects.get_or_create(
            fingerprint=proposed.fingerprint,
            defaults={
                "kind": proposed.kind,
                "user_id": proposed.user_id,
                "keep": proposed.keep,
                "key": proposed.keep.key if proposed.keep else "",
                "value": proposed.keep.value if proposed.keep else "",
                "similarity": proposed.similarity,
                "reason": proposed.reason[:300],
                "created_at": created_at,
            },
        )
        if created:
            proposal.memories.set(proposed.memories)
            consolidation_proposal_created(proposal)
    return created


def obsolete_reason(proposal: ConsolidationProposal, memories: Sequence[Memory]) -> str:
    """Why a pending proposal no longer fits its memories as they are now ("" if it does)."""
    for memory in memories:
        if memory.deleted_at is not None:
            return f"memory {memory.id} was deleted"
        if memory.status != Status.ACTIVE:
            return f"memory {memory.id} is {memory.status} now"
        if memory.updated_at > proposal.created_at:
            return f"memory {memory.id} changed after the proposal"
        recalled = memory.last_accessed_at
        if proposal.kind == ProposalKind.ARCHIVE and recalled and recalled > proposal.created_at:
            return f"memory {memory.id} was recalled after the proposal"
    if proposal.kind == ProposalKind.MERGE and (proposal.keep_id is None or len(memories) < 2):
        return "fewer than two of its memories are left"
    if not memories:
        return "its memory is gone"
    return ""


def _withdraw_obsolete(users: Sequence[User] | None) -> int:
    """Reject, by nobody and saying why, the pending proposals their memories outgrew."""
    pending = ConsolidationProposal.objects.filter(status=ProposalStatus.PENDING)
    if users is not None:
        pending = pending.filter(user__in=users)
    withdrawn = 0
    for proposal in pending.prefetch_related("memories").iterator(chunk_size=500):
        reason = obsolete_reason(proposal, list(proposal.memories.all()))
        if reason:
            # Conditional: a reviewer deciding it meanwhile wins.
            withdrawn += ConsolidationProposal.objects.filter(
                id=proposal.id, status=ProposalStatus.PENDING
            ).update(
                status=ProposalStatus.REJECTED,
                decided_at=timezone.now(),
                decision_note=f"withdrawn: {reason}"[:300],
            )
    return withdrawn


# --- Reading and deciding --------------------------------------------------------------------


def proposals_for_review(*, actor: User) -> QuerySet[ConsolidationProposal]:
    """Every proposal of the users staff `actor` administers, with its user and memories
    (and theirs), newest first."""
    return (
        ConsolidationProposal.objects.filter(administered_by(actor, via="user__"))
        .select_related("user")
        .prefetch_related(
            Prefetch(
                "memories",
                queryset=Memory.objects.select_related("user").order_by("created_at", "id"),
            )
        )
        .order_by("-created_at", "-id")
    )


def proposal_get(*, proposal_id: UUID, actor: User) -> ConsolidationProposal:
    """One proposal of a user `actor` administers, with its memories. Raises NotFound."""
    proposal = proposals_for_review(actor=actor).filter(id=proposal_id).first()
    if proposal is None:
        raise NotFound("No consolidation proposal with this id.", field="id")
    return proposal


def proposal_decide(
    *,
    proposal_id: UUID,
    actor: User,
    decision: str,
    key: str | None = None,
    value: str | None = None,
) -> ConsolidationProposal:
    """Approve or reject a pending proposal. Approving a merge merges its memories into the
    one it keeps, with the reviewer's `key` and `value` when given; approving an archival
    archives its memory; both through memories' services, with revisions. Raises NotFound,
    InvalidInput, Conflict (decided already, or its memories changed since: reject it),
    EmbedderUnavailable."""
    if decision not in (RevisionAction.APPROVE, RevisionAction.REJECT):
        raise InvalidInput("The decision is approve or reject.", field="decision")
    proposal = proposal_get(proposal_id=proposal_id, actor=actor)
    if (key or value) and (decision != "approve" or proposal.kind != ProposalKind.MERGE):
        raise InvalidInput(
            "Only approving a merge takes a key and value.", field="key" if key else "value"
        )
    if proposal.status != ProposalStatus.PENDING:
        raise Conflict(f"This proposal is {proposal.status} already.")
    if decision == RevisionAction.REJECT:
        return _proposal_close(proposal, actor=actor, status=ProposalStatus.REJECTED)

    memories = list(proposal.memories.all())
    changes: dict[str, Any] = {}
    vector: list[float] | None = None
    if proposal.kind == ProposalKind.MERGE:
        if proposal.keep is None:
            raise Conflict("The memory this merge would keep is gone: reject it.")
        changes = {
            "key": key or proposal.key,
            "value": value or proposal.value,
            "importance": max(memory.importance for memory in memories),
            "confidence": max(memory.confidence for memory in memories),
        }
        text = Memory(key=changes["key"], value=changes["value"]).embedding_text
        if text != proposal.keep.embedding_text:
            vector = embed_one(text)  # slow I/O, before the transaction
    with transaction.atomic():
        # The proposal first, then its memories (memory_merge locks them in id order too).
        locked = (
            ConsolidationProposal.objects.select_for_update()
            .filter(id=proposal.id, status=ProposalStatus.PENDING)
            .first()
        )
        if locked is None:
            raise Conflict("This proposal was decided meanwhile.")
        current = list(
            Memory.objects.select_for_update()
            .filter(id__in=[memory.id for memory in memories])
            .order_by("id")
        )
        reason = obsolete_reason(locked, current)
        if reason:
            raise Conflict(
                f"Its memories changed since it was proposed ({reason}): reject it; the next "
                "consolidation proposes again whatever still applies."
            )
        note = f"consolidation proposal {locked.id}"
        if locked.kind == ProposalKind.MERGE:
            services.memory_merge(
                keep=next(memory for memory in current if memory.id == locked.keep_id),
                others=[memory for memory in current if memory.id != locked.keep_id],
                actor=actor,
                changes=changes,
                vector=vector,
                note=note,
            )
        else:
            services.memory_archive(
                memory_id=current[0].id, actor=actor, note=f"{note}: {locked.reason}"[:200]
            )
        return _proposal_close(locked, actor=actor, status=ProposalStatus.APPROVED)


def _proposal_close(proposal: ConsolidationProposal, *, actor: User, status: str):
    """Mark a pending proposal decided; Conflict if someone decided it meanwhile."""
    decided_at = timezone.now()
    closed = ConsolidationProposal.objects.filter(
        id=proposal.id, status=ProposalStatus.PENDING
    ).update(status=status, decided_at=decided_at, decided_by=actor)
    if not closed:
        raise Conflict("This proposal was decided meanwhile.")
    return proposal_get(proposal_id=proposal.id, actor=actor)
