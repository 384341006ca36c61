"""The retention sweep (the periodic task, every RETENTION_SWEEP_INTERVAL_SECONDS): write the
time the rules give the current memories of every tenant that has rules, then archive each
current memory whose time has come, with an "expire" revision naming the cause and a
memory.expired event. Nothing is deleted; erasure stays separate (memories.erasure).

Idempotent and safe beside another sweep: each memory is archived in a transaction of its own,
locked and read again there, so of two sweeps at once the second finds it archived and writes
nothing; an edit of its expires_at meanwhile is read as committed."""

from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memories.models import Memory, RetentionRule, RevisionAction, Status, Tenant
from memories.recall.index import index_status
from memories.retention.expiry import current_memories, expired, retention_refresh
from memories.retention.rules import lock_tenant
from memories.services.revisions import record_revision, snapshot
from webhooks.events import memory_expired

EXPIRED_BY_OWN = "expires_at"
EXPIRED_BY_RULE = "retention_rule"


def _cause(
    memory: Memory, *, now: datetime, rules: dict[UUID, RetentionRule]
) -> tuple[str, datetime, str]:
    """Whose time came first, its moment, and the revision's note."""
    own = memory.expires_at if memory.expires_at and memory.expires_at <= now else None
    by_rule = memory.retention_expires_at
    if by_rule is not None and by_rule > now:
        by_rule = None
    if own is not None and (by_rule is None or own <= by_rule):
        return EXPIRED_BY_OWN, own, f"expired: its expires_at ({own.isoformat()})"
    assert by_rule is not None  # the memory was locked as expired
    rule_id = memory.retention_rule_id
    rule = None
    if rule_id is not None:
        # Read again when made since the sweep read the rules; None when deleted since.
        rule = rules.get(rule_id) or RetentionRule.objects.filter(id=rule_id).first()
    said = f"{rule.describe()}: {rule.days} days" if rule is not None else "since deleted"
    return EXPIRED_BY_RULE, by_rule, f"expired: retention rule {rule_id} ({said})"


def memory_expire(
    *, memory_id: UUID, now: datetime, rules: dict[UUID, RetentionRule] | None = None
) -> bool:
    """Archive a current memory whose time came by `now`: status archived, valid_until the
    moment it expired (so recall as of an earlier moment still finds it), an "expire"
    revision whose note names the cause, a memory.expired event. False when it is no longer
    current and expired (archived by another sweep, deleted, or given a later expires_at
    meanwhile). Never deletes."""
    with transaction.atomic():
        # Locked and read again: a second sweep waits for the first's lock, then PostgreSQL
        # reads the row as the first left it, archived, and finds nothing.
        memory = (
            Memory.objects.select_for_update()
            .filter(current_memories(), expired(now), id=memory_id)
            .first()
        )
        if memory is None:
            return False
        expired_by, at, note = _cause(memory, now=now, rules=rules or {})
        before = snapshot(memory)
        memory.status = Status.ARCHIVED
        memory.valid_until = max(at, memory.valid_from)
        memory.save(update_fields=["status", "valid_until", "updated_at"])
        record_revision(
            memory, action=RevisionAction.EXPIRE, actor=None, before=before, note=note[:200]
        )
        index_status([memory.id], Status.ARCHIVED)
        memory_expired(memory, expired_by=expired_by)
    return True


def retention_sweep() -> dict:
    """Write the rules' time of every tenant's current memories, then archive those whose
    time has come (memory_expire). Returns {"computed": memories whose time was written,
    "expired": memories archived}; all 0 when there was nothing to do."""
    computed = 0
    for tenant in Tenant.objects.filter(retention_rules__isnull=False).distinct():
        with transaction.atomic():
            lock_tenant(tenant)
            computed += retention_refresh(tenant=tenant)
    # A rule deleted without its service (a cascade) leaves a time no rule gives: gone.
    computed += (
        Memory.objects.filter(current_memories(), retention_expires_at__isnull=False)
        .exclude(retention_rule_id__in=RetentionRule.objects.values("id"))
        .update(retention_expires_at=None, retention_rule=None)
    )
    now = timezone.now()
    rules = RetentionRule.objects.in_bulk()
    due = Memory.objects.filter(current_memories())
    # One read per kind of time, each from its partial index.
    ids = set(due.filter(expires_at__lte=now).values_list("id", flat=True))
    ids |= set(due.filter(retention_expires_at__lte=now).values_list("id", flat=True))
    expired_count = sum(
        memory_expire(memory_id=memory_id, now=now, rules=rules) for memory_id in sorted(ids)
    )
    return {"computed": computed, "expired": expired_count}
