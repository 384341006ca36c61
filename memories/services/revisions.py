"""Revisions: the snapshot of a memory's fields and the revision rows every change writes."""

import math
from datetime import datetime
from uuid import UUID

from memories.errors import InvalidInput
from memories.models import (
    Memory,
    MemoryRevision,
    User,
)
from webhooks.events import memory_revision_event

EDITABLE_FIELDS = (
    "key",
    "value",
    "category",
    "importance",
    "confidence",
    "pinned",
    "metadata",
    "expires_at",
)
SNAPSHOT_FIELDS = (
    *EDITABLE_FIELDS,
    "status",
    "scope",
    "supersedes_id",
    "superseded_by_id",
    "valid_from",
    "valid_until",
    "retention_expires_at",
    "retention_rule_id",
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
    """Write the revision of a change, and queue the change's webhook event in the same
    transaction (webhooks.events): every change to a memory but a batch save's inserts
    (memories.saving) comes through here."""
    revision = MemoryRevision.objects.create(
        memory=memory,
        action=action,
        actor=actor,
        before=before,
        after=snapshot(memory),
        note=note,
    )
    memory_revision_event(memory, action=action, is_new=before is None)
    return revision
