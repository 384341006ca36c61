"""Scope carriers: personas, projects and topics."""

from uuid import UUID

from memories.errors import Forbidden
from memories.models import (
    Persona,
    Project,
    Topic,
    User,
)


def persona_create(*, actor: User, name: str, memory_enabled: bool = True) -> Persona:
    """Create a persona (staff only). Raises Forbidden."""
    if not actor.is_staff:
        raise Forbidden("Only staff can create personas.")
    return Persona.objects.create(name=name, memory_enabled=memory_enabled)


def persona_update(*, actor: User, persona: Persona, changes: dict) -> Persona:
    """Rename a persona or switch its memory (staff only). Raises Forbidden."""
    if not actor.is_staff:
        raise Forbidden("Only staff can change personas.")
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
