"""The memories that hold a key in a scope: a key names one fact there. Writes lock the key,
then read its current holders (saving.py, restore and approval in services, import)."""

import hashlib
from collections.abc import Iterable
from typing import NamedTuple
from uuid import UUID

from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from memories.models import CarrierIds, Memory, Status, normalise, unexpired


class FactGroup(NamedTuple):
    """The memories that hold one key in one scope: a key names one fact there."""

    scope: str
    user_id: UUID | None
    persona_id: UUID | None
    project_id: UUID | None
    topic_id: UUID | None
    key_normalised: str

    @property
    def carriers(self) -> CarrierIds:
        return CarrierIds(*self[:5])


def fact_group(memory: Memory) -> FactGroup:
    return FactGroup(*memory.carrier_ids(), normalise(memory.key))


def lock_fact_keys(groups: Iterable[FactGroup]) -> None:
    """Inside a transaction: make concurrent writes of these keys take turns until it ends,
    so a write reads the key's holders and writes its decision before the next one reads.
    There may be no row to lock yet, so PostgreSQL takes transaction-scoped advisory locks
    (in one order: two writes of several keys cannot deadlock). SQLite needs none: its
    transactions are IMMEDIATE (settings), each holds the database's write lock from its
    start."""
    if connection.vendor != "postgresql":
        return
    keys = sorted(
        {
            int.from_bytes(
                hashlib.blake2b(repr(tuple(map(str, group))).encode(), digest_size=8).digest(),
                "big",
                signed=True,
            )
            for group in groups
        }
    )
    with connection.cursor() as cursor:
        for key in keys:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def current_in_scope(carriers: CarrierIds) -> QuerySet[Memory]:
    """The current (active, live, not expired) memories of one scope and its carriers. An
    expired memory holds its key no longer: a save of the key writes a new memory, and the
    retention sweep archives the expired one."""
    return Memory.objects.filter(
        carriers.condition,
        unexpired(timezone.now()),
        status=Status.ACTIVE,
        deleted_at__isnull=True,
    )


def current_holders(group: FactGroup) -> QuerySet[Memory]:
    """The current memories holding the group's key, oldest first."""
    return (
        current_in_scope(group.carriers)
        .filter(key_normalised=group.key_normalised)
        .order_by("created_at", "id")
    )
