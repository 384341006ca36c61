"""Tenants: the products one installation serves, each with its own keys, end users,
personas and webhooks."""

from django.db import IntegrityError, transaction

from memories.errors import InvalidInput
from memories.models import DEFAULT_TENANT_SLUG, Tenant


def default_tenant() -> Tenant:
    """The tenant of an installation serving one product (made by a migration)."""
    tenant, _ = Tenant.objects.get_or_create(slug=DEFAULT_TENANT_SLUG)
    return tenant


def tenant_get_or_create(*, slug: str) -> Tenant:
    """The tenant with this slug, created when missing. Raises InvalidInput naming tenant."""
    slug = slug.strip()
    if (
        not slug
        or len(slug) > 50
        or not slug.isascii()
        or not slug.replace("-", "").replace("_", "").isalnum()
    ):
        raise InvalidInput(
            "A tenant slug is 1 to 50 letters, digits, hyphens or underscores.", field="tenant"
        )
    try:
        with transaction.atomic():
            tenant, _ = Tenant.objects.get_or_create(slug=slug)
    except IntegrityError:  # created by a concurrent call meanwhile
        tenant = Tenant.objects.get(slug=slug)
    return tenant
