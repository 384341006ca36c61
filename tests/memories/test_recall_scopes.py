"""Which memories recall may draw from (SPEC §4): all five scopes, and nobody else's."""

import pytest

from memories import services
from memories.models import Scope, Status
from memories.recall.recall import memory_recall
from memories.recall.scopes import recall_scopes
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


def recalled(**scope_args) -> set[str]:
    hits = memory_recall(query="coffee roast", scopes=recall_scopes(**scope_args), top_k=50)
    return {hit.memory.key for hit in hits}


def test_without_context_only_the_users_own_memories_count(owner, world):
    assert recalled(user=owner) == {"user"}


def test_a_topic_brings_its_session_memories(owner, world):
    assert recalled(user=owner, topic=world["topic"]) == {"user", "session"}


def test_a_project_brings_its_project_memories(owner, world):
    assert recalled(user=owner, project=world["project"]) == {"user", "project"}


def test_a_persona_brings_persona_and_the_users_persona_user_memories(owner, world):
    assert recalled(user=owner, persona=world["persona"]) == {"user", "persona", "persona_user"}


def test_a_topic_brings_its_project_and_persona_too(owner, world):
    topic = services.topic_create(
        user=owner, title="x", persona=world["persona"], project=world["project"]
    )

    assert recalled(user=owner, topic=topic) == {"user", "project", "persona", "persona_user"}


def test_a_work_session_gets_global_plus_its_project(owner, world):
    session = services.work_session_create(user=owner, project=world["project"])

    assert recalled(user=owner, work_session=session) == {"user", "project"}


def test_everything_at_once_never_reaches_other_users_or_other_carriers(owner, other, world):
    keys = recalled(
        user=owner, topic=world["topic"], project=world["project"], persona=world["persona"]
    )

    assert keys == {"user", "session", "project", "persona", "persona_user"}
    others = recalled(user=other, persona=world["persona"])
    assert others == {"their user", "persona", "their persona_user"}
