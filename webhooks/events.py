"""Emitting events: the services call these inside the transaction of the change they report.
Each call writes one delivery row per endpoint of the owner's tenant subscribed to the event
(a transactional outbox: a write that rolls back delivers nothing) and, once the transaction
commits, sends each delivery's task (webhooks.tasks). Nothing is sent from here.

Every change pays for this, so with no active endpoint an event costs one indexed query,
which is kept for the rest of the transaction (a batch of writes asks once), and nothing is
serialised."""

import functools
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from uuid import UUID

from celery import current_app
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from memories.models import (
    DEFAULT_TENANT_SLUG,
    ConsolidationProposal,
    Entity,
    Memory,
    Persona,
    RevisionAction,
    Status,
    Tenant,
    User,
)
from memories.representations import (
    ConsolidationProposalSerializer,
    EntitySerializer,
    MemorySerializer,
)
from webhooks.models import DELIVER_TASK, EventType, WebhookDelivery, WebhookEndpoint

# A memory's revision action, and the event it is. An expiry ("expire") is memory.expired,
# queued by the retention sweep itself with its cause (memory_expired).
MEMORY_EVENTS: dict[str, str] = {
    RevisionAction.CREATE: EventType.MEMORY_CREATED,
    RevisionAction.IMPORT: EventType.MEMORY_CREATED,
    RevisionAction.EDIT: EventType.MEMORY_UPDATED,
    RevisionAction.MERGE: EventType.MEMORY_UPDATED,
    RevisionAction.ARCHIVE: EventType.MEMORY_UPDATED,
    RevisionAction.RESTORE: EventType.MEMORY_UPDATED,
    RevisionAction.DELETE: EventType.MEMORY_DELETED,
    RevisionAction.APPROVE: EventType.MEMORY_APPROVED,
    RevisionAction.REJECT: EventType.MEMORY_REJECTED,
}

_Endpoint = tuple[UUID, UUID, list[str]]  # id, tenant id, events
_seen = threading.local()


def _endpoints_read() -> list[_Endpoint]:
    return [
        (endpoint_id, tenant_id, list(events or []))
        for endpoint_id, tenant_id, events in WebhookEndpoint.objects.filter(
            is_active=True
        ).values_list("id", "tenant_id", "events")
    ]


def _active_endpoints() -> list[_Endpoint]:
    """Every active endpoint, read once per transaction of this thread (outside one, on every
    call); saving an endpoint forgets them (endpoints_changed).

    A transaction is told apart by a marker callback registered with on_commit where the
    endpoints were read: Django empties its list of callbacks when the transaction commits or
    rolls back (and drops a rolled-back savepoint's), so while the marker is still at its
    place, this is the same transaction. (The outermost Atomic object cannot tell: a function
    decorated with @transaction.atomic uses the same one for every call.)"""
    if not connection.in_atomic_block:
        return _endpoints_read()
    seen = getattr(_seen, "endpoints", None)
    if seen is not None:
        marker, index, rows = seen
        callbacks = connection.run_on_commit
        if index < len(callbacks) and callbacks[index][1] is marker:
            return rows
    rows = _endpoints_read()
    marker = functools.partial(endpoints_changed)  # a new object: this transaction's marker
    transaction.on_commit(marker)
    _seen.endpoints = (marker, len(connection.run_on_commit) - 1, rows)
    return rows


def endpoints_changed() -> None:
    """Forget the endpoints read in this thread's transaction (an endpoint was saved)."""
    _seen.endpoints = None


def _tenant_of(user_id: UUID | None, persona_id: UUID | None = None) -> UUID | None:
    tenant_id = None
    if user_id is None and persona_id is not None:  # a persona memory: the persona's tenant
        personas = Persona.objects.filter(id=persona_id)
        tenant_id = personas.values_list("tenant_id", flat=True).first()
    elif user_id is not None:
        tenant_id = User.objects.filter(id=user_id).values_list("tenant_id", flat=True).first()
    if tenant_id is None:  # a local login: the default tenant
        tenant_id = (
            Tenant.objects.filter(slug=DEFAULT_TENANT_SLUG).values_list("id", flat=True).first()
        )
    return tenant_id


def event_emit(
    event_type: str,
    *,
    user_id: UUID | None,
    data: Callable[[], dict],
    erasable: bool = True,
    persona_id: UUID | None = None,
) -> int:
    """Queue `event_type` for the subscribed endpoints of the tenant of `user_id`, the end
    user it is about (without one, of the persona `persona_id`; a user without a tenant: the
    default tenant). `data` makes
    the event's object, called only when an endpoint wants it. The deliveries name the user
    (erasable) so that their erasure deletes them. Returns how many deliveries it queued."""
    endpoints = _active_endpoints()
    if not endpoints:
        return 0
    tenant_id = _tenant_of(user_id, persona_id)
    wanted = [
        endpoint_id
        for endpoint_id, tenant, events in endpoints
        if tenant == tenant_id and event_type in events
    ]
    if not wanted:
        return 0
    body = json.dumps(
        {"type": event_type, "timestamp": timezone.now().isoformat(), "data": data()},
        cls=DjangoJSONEncoder,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint_id=endpoint_id,
            event_type=event_type,
            message_id=f"msg_{uuid.uuid4().hex}",
            body=body,
            subject_user_id=user_id if erasable else None,
            next_attempt_at=timezone.now(),
        )
        for endpoint_id in wanted
    )
    deliveries_send_on_commit([delivery.id for delivery in deliveries])
    return len(deliveries)


def deliveries_send_on_commit(delivery_ids: Sequence[UUID]) -> None:
    """Send each delivery's task once the transaction commits (at once outside one). A send
    that fails (the broker is down) leaves the delivery due: the periodic task sends it."""
    task = current_app.tasks[DELIVER_TASK]
    for delivery_id in delivery_ids:
        transaction.on_commit(
            functools.partial(task.apply_async, args=[str(delivery_id)]), robust=True
        )


def _memory_data(memory: Memory, superseded_ids: Iterable[UUID] | None) -> dict:
    data = dict(MemorySerializer(memory).data)
    if superseded_ids is not None:
        data["superseded_ids"] = [str(memory_id) for memory_id in superseded_ids]
    return data


def memory_event(
    event_type: str, memory: Memory, *, superseded_ids: Iterable[UUID] | None = None
) -> int:
    """Queue a memory event: the memory as the API shows it (with `superseded_ids`, the
    memories it replaced, when given)."""
    return event_emit(
        event_type,
        user_id=memory.user_id,
        persona_id=memory.persona_id,
        data=lambda: _memory_data(memory, superseded_ids),
    )


def memory_revision_event(memory: Memory, *, action: str, is_new: bool) -> int:
    """The event of a memory's revision (memories.services.revisions.record_revision): a new
    memory pending review is a proposal; an import that updates a memory, an update."""
    event_type = MEMORY_EVENTS.get(action)
    if event_type is None:
        return 0
    if action == RevisionAction.IMPORT and not is_new:
        event_type = EventType.MEMORY_UPDATED
    if event_type == EventType.MEMORY_CREATED and memory.status == Status.PENDING_REVIEW:
        event_type = EventType.PROPOSAL_CREATED
    return memory_event(event_type, memory)


def memories_created(memories: Sequence[Memory], superseded: dict[UUID, list[UUID]]) -> None:
    """A batch of new memories (memories.saving): memory.created (proposal.created when
    pending review) for each, and memory.superseded for each that replaced others, its
    `superseded_ids` (from `superseded`, by the new memory's id) in both."""
    if not _active_endpoints():
        return
    for memory in memories:
        replaced = superseded.get(memory.id) or []
        created = (
            EventType.PROPOSAL_CREATED
            if memory.status == Status.PENDING_REVIEW
            else EventType.MEMORY_CREATED
        )
        memory_event(created, memory, superseded_ids=replaced)
        if replaced:
            memory_event(EventType.MEMORY_SUPERSEDED, memory, superseded_ids=replaced)


def memory_superseded(memory: Memory, superseded_ids: Sequence[UUID]) -> int:
    """memory.superseded: `memory` replaced (archived) the memories `superseded_ids`."""
    if not superseded_ids:
        return 0
    return memory_event(EventType.MEMORY_SUPERSEDED, memory, superseded_ids=superseded_ids)


def memory_expired(memory: Memory, *, expired_by: str) -> int:
    """memory.expired: the retention sweep archived `memory`, whose time had come;
    `expired_by` says whose time it was: "expires_at" (the memory's own) or
    "retention_rule" (the rule its retention_rule_id names)."""
    return event_emit(
        EventType.MEMORY_EXPIRED,
        user_id=memory.user_id,
        persona_id=memory.persona_id,
        data=lambda: {**_memory_data(memory, None), "expired_by": expired_by},
    )


def consolidation_proposal_created(proposal: ConsolidationProposal) -> int:
    """proposal.created for a consolidation proposal (a merge or an archival)."""
    return event_emit(
        EventType.PROPOSAL_CREATED,
        user_id=proposal.user_id,
        data=lambda: {
            "object": "consolidation_proposal",
            **ConsolidationProposalSerializer(proposal).data,
        },
    )


def entity_created(entity: Entity) -> int:
    """entity.created: a new entity of the user, as GET /api/entities/{id} lists it."""
    return event_emit(
        EventType.ENTITY_CREATED,
        user_id=entity.user_id,
        data=lambda: dict(EntitySerializer(entity).data),
    )


def entity_merged(entity: Entity, *, merged_ids: Sequence[UUID]) -> int:
    """entity.merged: `entity` took the names and memories of `merged_ids`, now gone."""
    return event_emit(
        EventType.ENTITY_MERGED,
        user_id=entity.user_id,
        data=lambda: {
            **EntitySerializer(entity).data,
            "merged_ids": [str(entity_id) for entity_id in merged_ids],
        },
    )


def user_erased(*, user_id: UUID, external_id: str | None) -> int:
    """user.erased: the user's id and external id, nothing else. Not erasable: it is what
    tells the product to erase the user on its side."""
    return event_emit(
        EventType.USER_ERASED,
        user_id=user_id,
        data=lambda: {"id": str(user_id), "external_id": external_id},
        erasable=False,
    )


def deliveries_of_user_drop(*, user_id: UUID) -> int:
    """Delete every delivery (and its attempts) of an event about this user: their bodies
    hold the user's memories. Returns how many."""
    deleted, _ = WebhookDelivery.objects.filter(subject_user_id=user_id).delete()
    return deleted
