"""What extraction reads from: a topic or a work session seen the same way, whether
extraction is on, and the activity since a source's cursor."""

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Max, Sum
from django.db.models.functions import Coalesce, Length

from extraction import policy
from extraction.models import SourceKind
from memories.carriers import scope_in_context
from memories.models import (
    CARRIERS,
    SCOPE_CARRIERS,
    ConfigEntry,
    Message,
    MessageRole,
    Persona,
    Project,
    Source,
    Topic,
    User,
    WorkSession,
    WorkSessionMessage,
)
from memories.selectors import persona_reachable

if TYPE_CHECKING:
    from django.db.models.fields.related_descriptors import RelatedManager


@dataclass
class ExtractionSource:
    """A topic or a work session, seen the same way by the extraction steps."""

    kind: str
    id: uuid.UUID
    user: User
    # The source's messages (a topic's or a work session's related manager).
    messages: "RelatedManager[Message] | RelatedManager[WorkSessionMessage]"
    memory_source: str
    topic: Topic | None = None
    work_session: WorkSession | None = None
    project: Project | None = None
    persona: Persona | None = None
    state_filter: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_topic(cls, topic: Topic) -> "ExtractionSource":
        return cls(
            kind=SourceKind.TOPIC,
            id=topic.id,
            user=topic.user,
            messages=topic.messages,
            memory_source=Source.CONVERSATION,
            topic=topic,
            project=topic.project,
            # Never another tenant's persona (a topic made before personas had tenants).
            persona=topic.persona
            if topic.persona is not None and persona_reachable(topic.user, topic.persona)
            else None,
            state_filter={"topic": topic},
        )

    @classmethod
    def of_work_session(cls, session: WorkSession) -> "ExtractionSource":
        return cls(
            kind=SourceKind.WORK_SESSION,
            id=session.id,
            user=session.user,
            messages=session.messages,
            memory_source=Source.WORK,
            work_session=session,
            project=session.project,
            state_filter={"work_session": session},
        )

    def carriers(self, scope: str) -> dict:
        """Where a candidate of `scope` lands for this source (memories.carriers'
        scope_in_context), with that scope's carrier objects by name."""
        present = [name for name in CARRIERS if getattr(self, name, None) is not None]
        landing = scope_in_context(scope, present=present)
        return {"scope": landing, **{name: getattr(self, name) for name in SCOPE_CARRIERS[landing]}}


def extraction_enabled() -> bool:
    entry = ConfigEntry.objects.filter(key="memory_extraction_enabled").first()
    return bool(entry.value) if entry else True


def source_activity(source: ExtractionSource, cursor: int) -> policy.Activity:
    new_user = source.messages.filter(id__gt=cursor, role=MessageRole.USER).aggregate(
        count=Count("id"), chars=Coalesce(Sum(Length("content")), 0)
    )
    last_at = source.messages.filter(id__gt=cursor).aggregate(at=Max("created_at"))["at"]
    return policy.Activity(
        new_user_messages=new_user["count"],
        new_user_chars=new_user["chars"],
        last_message_at=last_at,
    )
