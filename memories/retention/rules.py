"""The retention rules of a tenant, for staff and `review` keys (the API, the admin): each
caller manages its own tenant's (a local staff login: the default tenant's), and another
tenant's rule is not found. A rule's save or deletion writes the time it gives its tenant's
current memories in the same transaction (expiry.retention_refresh), so recall leaves out
what it expires from its commit on, and the next sweep archives it."""

from uuid import UUID

from django.db import transaction
from django.db.models import Q, QuerySet

from memories.accounts.tenants import default_tenant
from memories.errors import Conflict, InvalidInput, NotFound
from memories.models import DEFAULT_TENANT_SLUG, Project, RetentionRule, Scope, Tenant, User
from memories.retention.expiry import MIN_DAYS, retention_refresh

# Longer is no retention at all (and past what a date can hold after a memory's valid_from).
MAX_DAYS = 36_500


def tenant_of(actor: User) -> Tenant:
    """The tenant whose rules the actor manages: a key's account's, else the default."""
    return actor.tenant or default_tenant()


def retention_rules_of(*, actor: User) -> QuerySet[RetentionRule]:
    return RetentionRule.objects.filter(tenant=tenant_of(actor)).order_by("created_at", "id")


def retention_rule_get(*, actor: User, rule_id: UUID) -> RetentionRule:
    """Raises NotFound (another tenant's rules are not found either)."""
    rule = retention_rules_of(actor=actor).filter(id=rule_id).first()
    if rule is None:
        raise NotFound("No retention rule with this id.", field="id")
    return rule


def tenant_projects(tenant: Tenant) -> QuerySet[Project]:
    """The projects of the tenant's users (a local login's: the default tenant's)."""
    owners = Q(owner__tenant=tenant)
    if tenant.slug == DEFAULT_TENANT_SLUG:
        owners |= Q(owner__tenant__isnull=True)
    return Project.objects.filter(owners)


def lock_tenant(tenant: Tenant) -> None:
    """Inside a transaction: rule writes and the sweep's refresh of one tenant take turns,
    so each computes from the rules as the other committed them, never from a set one of
    them is changing. (SQLite's IMMEDIATE transactions take turns anyway.)"""
    Tenant.objects.select_for_update().filter(id=tenant.id).first()


def retention_rule_check(rule: RetentionRule) -> None:
    """Raises InvalidInput naming days, scope or project_id when the rule cannot be saved
    (its category is trimmed)."""
    if rule.days is None or not MIN_DAYS <= rule.days <= MAX_DAYS:
        raise InvalidInput(f"From {MIN_DAYS} to {MAX_DAYS} days.", field="days")
    if rule.scope and rule.scope not in Scope.values:
        raise InvalidInput(f"One of {', '.join(Scope.values)}, or blank.", field="scope")
    rule.category = rule.category.strip()
    projects = tenant_projects(rule.tenant)
    if rule.project_id is not None and not projects.filter(id=rule.project_id).exists():
        raise InvalidInput("No project of this tenant has this id.", field="project_id")


def retention_rule_save(*, rule: RetentionRule) -> RetentionRule:
    """Create or change a rule (its tenant set), then write the time it and the tenant's
    other rules give the tenant's current memories, all in one transaction. Raises
    InvalidInput (days, scope, project_id), Conflict (the tenant has a rule for this project,
    scope and category already)."""
    retention_rule_check(rule)
    tenant = rule.tenant
    with transaction.atomic():
        lock_tenant(tenant)
        project = (
            Q(project__isnull=True) if rule.project_id is None else Q(project_id=rule.project_id)
        )
        same = RetentionRule.objects.filter(
            project, tenant=tenant, scope=rule.scope, category=rule.category
        ).exclude(id=rule.id)
        existing = same.first()
        if existing is not None:
            raise Conflict(
                f"Retention rule {existing.id} is for these memories already "
                f"({existing.describe()}): change its days instead "
                f"(PATCH /api/retention-rules/{existing.id})."
            )
        rule.save()
        retention_refresh(tenant=tenant)
    return rule


@transaction.atomic
def retention_rule_delete(*, rule: RetentionRule) -> None:
    """Delete a rule; the tenant's current memories take the time its other rules give them
    (none: they no longer expire by rule). The memories it archived stay archived."""
    tenant = rule.tenant
    lock_tenant(tenant)
    rule.delete()
    retention_refresh(tenant=tenant)
