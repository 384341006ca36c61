"""Scope carriers: personas, projects and topics."""

from uuid import UUID

from memories.errors import Forbidden, InvalidInput
from memories.models import (
    DEFAULT_TENANT_SLUG,
    Persona,
    Project,
    Tenant,
    Topic,
    User,
)


def persona_tenant(*, actor: User, tenant: Tenant | None = None) -> Tenant:
    """The tenant a persona `actor` creates belongs to: a key's (or an end user's) own
    tenant, whatever is asked; for a local login, the tenant it names, else the only one
    there is (the default tenant, made as migration 0015 does, when there is none). Raises
    InvalidInput (several tenants and none named)."""
    if actor.tenant is not None:
        return actor.tenant
    if tenant is not None:
        return tenant
    tenants = list(Tenant.objects.all()[:2])
    if len(tenants) == 1:
        return tenants[0]
    if not tenants:
        default, _ = Tenant.objects.get_or_create(
            slug=DEFAULT_TENANT_SLUG, defaults={"name": "Default"}
        )
        return default
    raise InvalidInput(
        "This installation serves several tenants: name the persona's tenant by its slug.",
        field="tenant",
    )


def persona_create(
    *, actor: User, name: str, memory_enabled: bool = True, tenant: Tenant | None = None
) -> Persona:
    """Create a persona (staff only) of the actor's tenant, or for a local login of `tenant`
    (persona_tenant). Raises Forbidden, InvalidInput (tenant)."""
    if not actor.is_staff:
        raise Forbidden("Only staff can create personas.")
    return Persona.objects.create(
        name=name, memory_enabled=memory_enabled, tenant=persona_tenant(actor=actor, tenant=tenant)
    )


def persona_update(*, actor: User, persona: Persona, changes: dict) -> Persona:
    """Rename a persona or switch its memory (staff only; the caller found the persona
    through selectors.persona_get, so it is one the actor reaches). Its tenant is fixed.
    Raises Forbidden, InvalidInput (tenant)."""
    if not actor.is_staff:
        raise Forbidden("Only staff can change personas.")
    if "tenant" in changes:
        raise InvalidInput(
            "A persona's tenant is fixed: create a persona of the other tenant instead.",
            field="tenant",
        )
    for name, value in changes.items():
        setattr(persona, name, value)
    persona.save(update_fields=list(changes))
    return persona


def project_create(*, owner: User, name: str) -> Project:
    """Create a managed project owned by `owner`."""
    return Project.objects.create(owner=owner, name=name)


def topic_create(
    *,
    user: User,
    title: str = "",
    persona: Persona | None = None,
    project: Project | None = None,
    channel_id: UUID | None = None,
) -> Topic:
    """Create a conversation mirrored from the chat product."""
    return Topic.objects.create(
        user=user, title=title, persona=persona, project=project, channel_id=channel_id
    )
