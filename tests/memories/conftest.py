"""Fixtures shared by the memory tests."""

import pytest

from memories import services
from memories.models import Scope, Status
from tests.conftest import make_user

TEXT = "Prefers dark roast coffee in the morning"


@pytest.fixture
def world(owner, other):
    """The same fact in every scope, for the owner, for another user and elsewhere."""
    persona = services.persona_create(actor=make_user("boss", is_staff=True), name="Barista")
    other_persona = services.persona_create(actor=make_user("boss2", is_staff=True), name="Chef")
    project = services.project_create(owner=owner, name="p")
    other_project = services.project_create(owner=owner, name="q")
    topic = services.topic_create(user=owner, title="t")
    other_topic = services.topic_create(user=owner, title="u")
    others_topic = services.topic_create(user=other, title="v")

    def make(label, **carriers):
        return services.memory_create(actor=None, key=label, value=TEXT, **carriers)

    return {
        "persona": persona,
        "project": project,
        "topic": topic,
        "memories": {
            "user": make("user", scope=Scope.USER, user=owner),
            "project": make("project", scope=Scope.PROJECT, user=owner, project=project),
            "other project": make(
                "other project", scope=Scope.PROJECT, user=owner, project=other_project
            ),
            "session": make("session", scope=Scope.SESSION, user=owner, topic=topic),
            "other session": make(
                "other session", scope=Scope.SESSION, user=owner, topic=other_topic
            ),
            "persona": make("persona", scope=Scope.PERSONA, persona=persona),
            "other persona": make("other persona", scope=Scope.PERSONA, persona=other_persona),
            "persona_user": make(
                "persona_user", scope=Scope.PERSONA_USER, user=owner, persona=persona
            ),
            "their persona_user": make(
                "their persona_user", scope=Scope.PERSONA_USER, user=other, persona=persona
            ),
            "their user": make("their user", scope=Scope.USER, user=other),
            "their session": make(
                "their session", scope=Scope.SESSION, user=other, topic=others_topic
            ),
            "pending": services.memory_create(
                actor=None,
                key="pending",
                value=TEXT,
                scope=Scope.USER,
                user=owner,
                status=Status.PENDING_REVIEW,
            ),
        },
    }
