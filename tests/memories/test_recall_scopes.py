"""Which memories recall may draw from: all five scopes, and nobody else's."""

from memories import services
from memories.recall.recall import memory_recall
from memories.recall.scopes import recall_scopes


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
