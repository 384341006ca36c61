"""The time retention rules give a memory: retention_expires_at, the valid_from of a current
memory plus the days of the shortest rule of its tenant that matches it, written with the rule
(retention_rule) so the sweep can name it.

Written in bulk, one UPDATE per rule over the tenant's current memories, each only where the
stored value differs (a sweep that finds nothing changed writes no row): by a rule's save and
deletion (all of the tenant's), by the sweep (all of every tenant that has rules), and by the
writes that can make a memory expired under a rule at once (a save or import with a valid_from
a day old or more, an edit of its category). A memory that became current less than a day ago
cannot have expired under any rule yet (days >= 1), so the next sweep computing its time is
soon enough."""

import functools
import operator
from collections.abc import Iterable, Sequence
from datetime import timedelta
from uuid import UUID

from django.db import transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.utils import timezone

from memories.models import (
    DEFAULT_TENANT_SLUG,
    Memory,
    RetentionRule,
    Status,
    Tenant,
)

# Rules need at least a day: a memory current for less cannot have expired under one.
MIN_DAYS = 1
EXPIRY_PASSED = "Must be in the future; leave it out (or null) for a memory that does not expire."


def tenant_memories(tenant: Tenant) -> Q:
    """The memories of `tenant`, as its events are routed (webhooks.events): those about its
    users (about a local login, which has no tenant: the default tenant's), and the persona
    memories of its personas."""
    users = Q(user__tenant_id=tenant.id)
    if tenant.slug == DEFAULT_TENANT_SLUG:
        users |= Q(user__isnull=False, user__tenant__isnull=True)
    return users | Q(user__isnull=True, persona__tenant_id=tenant.id)


def rule_matches(rule: RetentionRule) -> Q:
    """The memories the rule is for, within its tenant's: of its project (project memories,
    and session memories of the project's conversations), scope and category, each when set."""
    parts = [Q(pk__isnull=False)]  # every memory: a rule of no scope, category or project
    if rule.project_id is not None:
        parts.append(Q(project_id=rule.project_id) | Q(topic__project_id=rule.project_id))
    if rule.scope:
        parts.append(Q(scope=rule.scope))
    if rule.category:
        parts.append(Q(category=rule.category))
    return functools.reduce(operator.and_, parts)


def precedence(rule: RetentionRule) -> tuple:
    """The order rules claim memories in: the shortest first; of equal days, a project's
    before the tenant's, a rule naming a scope or category before one that does not (its
    name is the better cause in a memory's revision), then the oldest."""
    return (rule.days, rule.project_id is None, not rule.scope, not rule.category, rule.created_at)


def current_memories() -> Q:
    """Current memories: active, live, not superseded or archived."""
    return Q(status=Status.ACTIVE, valid_until__isnull=True, deleted_at__isnull=True)


def expired(moment) -> Q:
    """Memories whose own expires_at or retention rule's time has come by `moment` (the
    opposite of models.unexpired), each half answered by its partial index."""
    return Q(expires_at__lte=moment) | Q(retention_expires_at__lte=moment)


def retention_refresh(*, tenant: Tenant, within: Q | None = None) -> int:
    """Write the time `tenant`'s rules give each of its current memories (those `within`,
    when given) into retention_expires_at and retention_rule: the shortest matching rule's
    (precedence), null where no rule matches. Only rows whose values differ are written.
    Returns how many. In the caller's transaction when there is one."""
    rules = sorted(RetentionRule.objects.filter(tenant=tenant), key=precedence)
    current = Memory.objects.filter(tenant_memories(tenant), current_memories())
    if within is not None:
        current = current.filter(within)
    written = 0
    claimed: list[Q] = []
    with transaction.atomic():
        for rule in rules:
            matches = rule_matches(rule)
            expiry = ExpressionWrapper(
                F("valid_from") + timedelta(days=rule.days), output_field=DateTimeField()
            )
            rows = current.filter(matches)
            if claimed:  # a shorter rule (or one before it) has them
                rows = rows.exclude(functools.reduce(operator.or_, claimed))
            # Both negations are true for a null column: a memory no rule had gets its time.
            written += rows.filter(
                ~Q(retention_rule_id=rule.id) | ~Q(retention_expires_at=expiry)
            ).update(retention_rule_id=rule.id, retention_expires_at=expiry)
            claimed.append(matches)
        unclaimed = current.filter(
            Q(retention_expires_at__isnull=False) | Q(retention_rule__isnull=False)
        )
        if claimed:
            unclaimed = unclaimed.exclude(functools.reduce(operator.or_, claimed))
        written += unclaimed.update(retention_expires_at=None, retention_rule=None)
    return written


def tenants_of(memory_ids: Iterable[UUID]) -> set[UUID]:
    """The ids of the tenants of these memories (tenant_memories)."""
    rows = Memory.objects.filter(id__in=list(memory_ids)).values_list(
        "user_id", "user__tenant_id", "persona__tenant_id"
    )
    found: set[UUID] = set()
    default = None
    for user_id, user_tenant_id, persona_tenant_id in rows:
        if user_id is None:
            found.add(persona_tenant_id)
        elif user_tenant_id is not None:
            found.add(user_tenant_id)
        else:  # a local login: the default tenant
            if default is None:
                default = (
                    Tenant.objects.filter(slug=DEFAULT_TENANT_SLUG)
                    .values_list("id", flat=True)
                    .first()
                )
            if default is not None:
                found.add(default)
    return found


def retention_refresh_written(memories: Sequence[Memory]) -> list[Memory]:
    """After a write of these memories, in its transaction: the rules' time of those that
    became current a day ago or more (a save or import with an old valid_from, an edit of an
    old memory's category), which a rule may have expired already; the others wait for the
    sweep. Costs nothing when none is that old. Returns the memories whose time it wrote,
    their retention fields read again."""
    cutoff = timezone.now() - timedelta(days=MIN_DAYS)
    old = {
        memory.id: memory
        for memory in memories
        if memory.status == Status.ACTIVE and memory.valid_from <= cutoff
    }
    if not old:
        return []
    tenant_ids = tenants_of(old)
    if not RetentionRule.objects.filter(tenant_id__in=tenant_ids).exists():
        return []
    for tenant in Tenant.objects.filter(id__in=tenant_ids):
        retention_refresh(tenant=tenant, within=Q(id__in=list(old)))
    stored = Memory.objects.filter(id__in=list(old)).values_list(
        "id", "retention_expires_at", "retention_rule_id"
    )
    for memory_id, expires_at, rule_id in stored:
        old[memory_id].retention_expires_at = expires_at
        old[memory_id].retention_rule_id = rule_id
    return list(old.values())
