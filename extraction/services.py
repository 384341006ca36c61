"""Extraction: read what is new in a conversation or work session, ask the utility model (or
the rules) for memories, and save them as pending_review after deduplication.

Safe to run on several workers at once and to retry: a task first takes its run (see
extraction/runs.py: one delivery of a task works, a duplicate leaves the run alone), then
claims its source with a conditional UPDATE (one claimant wins), calls the model outside any
transaction, and writes its memories and moves the source's cursor in one transaction, only
if the cursor is still where the run started. A duplicated or retried task therefore writes
nothing twice.
"""

import dataclasses
import functools
import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from extraction import keys, llm, policy, runs, steering
from extraction.dedupe import classify
from extraction.models import ExtractionRun, ExtractionState, RunStatus, SourceKind
from extraction.parsing import Candidate, parse_candidates
from extraction.prompt import EXTRACTABLE_ROLES, ShownMessage, build_messages, shown_messages
from extraction.rules import extract_by_rules_cited
from extraction.sources import ExtractionSource, extraction_enabled, source_activity
from memories import services as memory_services
from memories.embeddings.embedders import get_embedder
from memories.entities.linking import Mention, entities_link
from memories.models import (
    CarrierIds,
    Memory,
    MessageRole,
    Status,
    Topic,
    WorkSession,
    normalise,
)
from memories.recall.vector_store import get_vector_store

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)


class _TakenOver(Exception):
    """This attempt no longer holds its run: its writes are rolled back."""


def _finish(run: ExtractionRun, **outcome) -> ExtractionRun:
    runs.run_finish(run, **outcome)
    run.refresh_from_db()
    return run


class SourceGone(Exception):
    """The conversation or work session to extract from no longer exists: deleted, or its user
    erased, after its extraction was queued. Nothing to do, and nothing went wrong."""


def extract_topic(
    *,
    topic_id: uuid.UUID | str,
    automatic: bool = False,
    task_id: str = "",
    is_retry: bool = False,
) -> ExtractionRun:
    """Extract from a conversation. `automatic` applies the trigger policy first (scanner,
    posted messages); a direct call extracts whatever is new. The run of `task_id` is the one
    worked on (see runs.run_start; none: a run of its own). Never raises for model errors:
    they end as a failed run."""
    try:
        topic = Topic.objects.select_related("user", "project", "persona").get(id=topic_id)
    except Topic.DoesNotExist:
        raise SourceGone(f"conversation {topic_id}") from None
    source = ExtractionSource.of_topic(topic)
    return _extract_run(source, automatic=automatic, task_id=task_id, is_retry=is_retry)


def extract_work_session(
    *, session_id: uuid.UUID | str, task_id: str = "", is_retry: bool = False
) -> ExtractionRun:
    """Extract from a work session: managed projects only, every N new user messages."""
    try:
        session = WorkSession.objects.select_related("user", "project").get(id=session_id)
    except WorkSession.DoesNotExist:
        raise SourceGone(f"work session {session_id}") from None
    source = ExtractionSource.of_work_session(session)
    return _extract_run(source, automatic=True, task_id=task_id, is_retry=is_retry)


def _extract_run(
    source: ExtractionSource, *, automatic: bool, task_id: str, is_retry: bool
) -> ExtractionRun:
    run, is_ours = runs.run_start(
        kind=source.kind,
        source_id=source.id,
        user=source.user,
        task_id=task_id,
        is_retry=is_retry,
    )
    if not is_ours:
        # A second delivery of a task another worker is on, or one that has finished.
        logger.info("extraction task %s: run %s is %s, left as it is", task_id, run.id, run.status)
        return run
    return _extract(source, run=run, automatic=automatic)


def _skip_reason(source: ExtractionSource, cursor: int, automatic: bool) -> str | None:
    if not extraction_enabled():
        return "extraction is switched off (memory_extraction_enabled)"
    if source.persona is not None and not source.persona.memory_enabled:
        return "memory is switched off for this persona (memory_enabled)"
    activity = source_activity(source, cursor)
    if source.kind == SourceKind.WORK_SESSION:
        decision = policy.work_session_decision(
            has_project=source.project is not None, new_user_messages=activity.new_user_messages
        )
    elif not source.messages.filter(id__gt=cursor, role__in=EXTRACTABLE_ROLES).exists():
        return "no new messages"
    elif automatic:
        decision = policy.conversation_decision(activity, now=timezone.now())
    else:
        return None
    return None if decision.extract else decision.reason


def _extract(source: ExtractionSource, *, run: ExtractionRun, automatic: bool) -> ExtractionRun:
    state, _ = ExtractionState.objects.get_or_create(**source.state_filter)
    cursor = state.last_message_id
    reason = _skip_reason(source, cursor, automatic)
    if reason:
        return _finish(run, status=RunStatus.SKIPPED, reason=reason)

    messages = list(
        source.messages.filter(id__gt=cursor, role__in=EXTRACTABLE_ROLES)
        .order_by("id")
        .values_list("id", "role", "content")[: settings.EXTRACTION_MAX_MESSAGES_PER_RUN]
    )
    read: dict[str, Any] = {"from_message_id": messages[0][0], "to_message_id": messages[-1][0]}
    if not _claim(state, cursor, run.id):
        return _finish(
            run,
            status=RunStatus.SKIPPED,
            reason="another extraction of this source is running or has finished",
        )

    # Slow I/O, outside any transaction: the model, then the embeddings. Both extractors cite
    # messages by their number in `shown`, which provenance turns back into message ids.
    shown = shown_messages(messages)
    extractor = "llm" if llm.is_configured() else "rules"
    steered = steering.steering_for(
        tenant_id=source.user.tenant_id,
        project_id=source.project.id if source.project is not None else None,
    )
    current = _current_memories(source)
    try:
        if extractor == "llm":
            block = steering.prompt_block(steered, [(m.key, m.value) for m in current])
            candidates, attempts = llm.complete_json(
                build_messages(shown, settings_block=block),
                parse=functools.partial(parse_candidates, message_count=len(shown)),
            )
        else:
            attempts = 0
            candidates = extract_by_rules_cited(
                [(n, m.content) for n, m in enumerate(shown, 1) if m.role == MessageRole.USER]
            )
        candidates, excluded = _kept(candidates, steered, source)
        vectors = _embed(candidates)
        candidates = _placed(candidates, vectors, steered.categories)
        candidates = keys.with_current_keys(candidates, vectors, current)
    except llm.ExtractionFailed as exc:
        _release(state, run.id)
        logger.warning("extraction of %s %s failed: %s", source.kind, source.id, exc.reason)
        return _finish(
            run,
            status=RunStatus.FAILED,
            reason=exc.reason,
            extractor=extractor,
            attempts=exc.attempts,
            **read,
        )
    except Exception:
        _release(state, run.id)
        raise

    try:
        with transaction.atomic():
            locked = ExtractionState.objects.select_for_update().get(id=state.id)
            if locked.claim_token != run.id or locked.last_message_id != cursor:
                return _finish(
                    run,
                    status=RunStatus.SKIPPED,
                    reason="another extraction of this source finished first",
                )
            saved = _save_candidates(source, candidates, vectors, shown)
            saved["skipped"] += excluded
            locked.last_message_id = read["to_message_id"]
            locked.last_extracted_at = timezone.now()
            locked.claim_token = None
            locked.claimed_until = None
            locked.save(
                update_fields=[
                    "last_message_id",
                    "last_extracted_at",
                    "claim_token",
                    "claimed_until",
                ]
            )
            # In the same transaction as the memories: if another delivery took this run
            # over meanwhile (ours outlived the claim time), nothing of ours is kept and the
            # other attempt extracts these messages.
            if not runs.run_finish(
                run,
                status=RunStatus.DONE,
                extractor=extractor,
                attempts=attempts,
                **read,
                **saved,
            ):
                raise _TakenOver
    except _TakenOver:
        logger.warning("extraction run %s was taken over; this attempt wrote nothing", run.id)
    run.refresh_from_db()
    return run


def _claim(state: ExtractionState, cursor: int, run_id: uuid.UUID) -> bool:
    """Take the source for this run, unless another run holds an unexpired claim. The
    conditional UPDATE is the lock: of two workers, exactly one updates the row. The claim
    carries the run's id, so a retry of the same run (its attempt raised before releasing,
    say on a database error) takes it back instead of waiting for it to expire."""
    now = timezone.now()
    claimed = (
        ExtractionState.objects.filter(id=state.id, last_message_id=cursor)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now) | Q(claim_token=run_id))
        .update(
            claim_token=run_id,
            claimed_until=now + timedelta(seconds=settings.EXTRACTION_CLAIM_SECONDS),
        )
    )
    return bool(claimed)


def _release(state: ExtractionState, run_id: uuid.UUID) -> None:
    ExtractionState.objects.filter(id=state.id, claim_token=run_id).update(
        claim_token=None, claimed_until=None
    )


def _current_memories(source: ExtractionSource) -> list[Memory]:
    """The user's current memories of the scopes this source writes to most (the user's own,
    and the project's when it has one), most important first: their keys are the ones a
    proposal reuses (steering.CURRENT_KEYS_MAX of them)."""
    placements = [CarrierIds.of(**source.carriers("user"))]
    if source.project is not None:
        placements.append(CarrierIds.of(**source.carriers("project")))
    condition = Q()
    for placement in placements:
        condition |= placement.condition
    return list(
        Memory.objects.filter(
            condition, status=Status.ACTIVE, valid_until__isnull=True, deleted_at__isnull=True
        ).order_by("-importance", "-updated_at", "id")[: steering.CURRENT_KEYS_MAX]
    )


def _kept(
    candidates: list[Candidate], steered: steering.Steering, source: ExtractionSource
) -> tuple[list[Candidate], int]:
    """The candidates of no excluded class (steering.excluded), and how many were not."""
    kept = []
    for candidate in candidates:
        found = steering.excluded(
            key=candidate.key,
            value=candidate.value,
            category=candidate.category,
            exclude=steered.exclude,
        )
        if found is None:
            kept.append(candidate)
        else:
            logger.info(
                "extraction of %s %s: a proposed memory of an excluded class (%s) left out",
                source.kind,
                source.id,
                found,
            )
    return kept, len(candidates) - len(kept)


def _placed(
    candidates: list[Candidate],
    vectors: Sequence[list[float] | None],
    categories: Sequence[tuple[str, str]],
) -> list[Candidate]:
    """With categories set, each candidate in one of them: the one it names (case and
    accents aside), else the nearest to its text by vector (the first without an embedder)."""
    if not categories:
        return candidates
    embedder = get_embedder()
    texts = [f"{name}: {description}" for name, description in categories]
    category_vectors = embedder.embed(texts) if embedder is not None else None
    placed = []
    for candidate, vector in zip(candidates, vectors, strict=True):
        name = steering.category_named(candidate.category, categories)
        if name is None:
            name = categories[0][0]
            if vector is not None and category_vectors is not None:
                scores = [keys.cosine(vector, other) for other in category_vectors]
                name = categories[scores.index(max(scores))][0]
        placed.append(dataclasses.replace(candidate, category=name))
    return placed


def _embed(candidates: list[Candidate]) -> Sequence[list[float] | None]:
    embedder = get_embedder()
    if embedder is None or not candidates:
        return [None] * len(candidates)
    texts = [f"{c.key}: {c.value}" for c in candidates]
    return embedder.embed(texts)


def _comparable(placement: CarrierIds, candidate: Candidate, vector, same_text: dict) -> tuple:
    """The user's memories worth comparing with a candidate, and their similarity to it:
    those with the same normalised text or key (from `same_text`, the scope's memories by
    normalised value and key) and the nearest by vector."""
    similarity = {}
    if vector is not None:
        partition = placement.partition
        store = get_vector_store()
        for status in (Status.ACTIVE, Status.PENDING_REVIEW):
            for hit in store.nearest(vector=vector, partitions=[partition], k=5, status=status):
                similarity[hit.memory_id] = hit.similarity
    ids = set(similarity)
    ids |= same_text.get(("value", normalise(candidate.value)), set())
    ids |= same_text.get(("key", normalise(candidate.key)), set())
    return list(Memory.objects.filter(id__in=ids)), similarity


def _scope_texts(placement: CarrierIds) -> dict:
    """The scope's live active and pending memories by normalised value and by normalised
    key. One query per scope and run: normalising happens in Python, so it is the same
    function on both databases."""
    rows = Memory.objects.filter(
        placement.condition,
        deleted_at__isnull=True,
        status__in=[Status.ACTIVE, Status.PENDING_REVIEW],
    ).values_list("id", "key", "value")
    index: dict = {}
    for memory_id, key, value in rows:
        index.setdefault(("value", normalise(value)), set()).add(memory_id)
        index.setdefault(("key", normalise(key)), set()).add(memory_id)
    return index


def _provenance(
    source: ExtractionSource, candidate: Candidate, shown: list[ShownMessage]
) -> tuple[dict, str]:
    """Where a candidate came from, as memory_create takes it, and a note for its create
    revision (saying what evidence was dropped, if any)."""
    note = f"extracted from {source.kind} {source.id}"
    if candidate.evidence_dropped:
        dropped = ", ".join(candidate.evidence_dropped)
        note += f"; evidence {dropped} names no message shown (1-{len(shown)}): dropped"
        logger.info(
            "extraction of %s %s: a candidate cited %d messages that were not shown",
            source.kind,
            source.id,
            len(candidate.evidence_dropped),
        )
    provenance = {
        "source_topic": source.topic,
        "source_work_session": source.work_session,
        "source_message_ids": [shown[number - 1].id for number in candidate.evidence],
    }
    return provenance, note[:200]


def _save_candidates(source, candidates, vectors, shown) -> dict:
    """Write the candidates that are neither repeated nor duplicates; the counts, and the ids
    of the memories written (created and merged ones) as `memory_ids`.

    A candidate is compared with the memories this run has written already exactly as with
    the stored ones (their texts join the scope's index, their vectors are in the store
    within this transaction): one run proposes a fact once, and a later candidate with the
    same key proposes its replacement."""
    created = merged = skipped = 0
    memory_ids: list[str] = []
    texts_by_scope: dict = {}
    for candidate, vector in zip(candidates, vectors, strict=True):
        carriers = source.carriers(candidate.scope)
        placement = CarrierIds.of(**carriers)
        if placement not in texts_by_scope:
            texts_by_scope[placement] = _scope_texts(placement)
        texts = texts_by_scope[placement]
        existing, similarity = _comparable(placement, candidate, vector, texts)
        decision = classify(
            key=candidate.key,
            value=candidate.value,
            existing=existing,
            similarity=similarity,
            duplicate_similarity=settings.EXTRACTION_DUPLICATE_SIMILARITY,
        )
        if decision.kind == "duplicate":
            skipped += 1
            continue
        provenance, note = _provenance(source, candidate, shown)
        saved = memory_services.memory_create(
            actor=None,
            key=candidate.key,
            value=candidate.value,
            category=candidate.category,
            importance=candidate.importance,
            confidence=candidate.confidence,
            source=source.memory_source,
            status=Status.PENDING_REVIEW,
            supersedes=decision.existing if decision.kind == "conflict" else None,
            vector=vector,
            note=note,
            **provenance,
            **carriers,
        )
        entities_link(saved, [Mention(m.name, m.kind, m.relation) for m in candidate.entities])
        memory_ids.append(str(saved.id))
        texts.setdefault(("value", normalise(saved.value)), set()).add(saved.id)
        texts.setdefault(("key", normalise(saved.key)), set()).add(saved.id)
        if decision.kind == "conflict":
            merged += 1
        else:
            created += 1
    return {"created": created, "merged": merged, "skipped": skipped, "memory_ids": memory_ids}
