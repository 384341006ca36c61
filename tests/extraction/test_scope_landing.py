"""Where an extracted memory lands: the scope the model names when the conversation or work
session carries it (memories.models.SCOPE_CARRIERS), else the nearest one it does carry."""

import pytest

from memories.models import Memory
from tests.extraction.helpers import (
    accepted,
    answer,
    extract,
    extract_work,
    memory,
    new_project,
    new_topic,
    new_work_session,
    post,
    post_work,
)

# A fact the model files under each scope (its key names the scope asked for).
FACTS = {
    "user": "Is vegetarian",
    "session": "Wants this trip under 2000 euros",
    "project": "The billing service is written in Go",
    "persona_user": "Likes the tutor to quiz them in French",
}
SCOPES = list(FACTS)


def extracted(owner) -> dict[str, Memory]:
    """The memories extraction saved, by the scope the model asked for (their key)."""
    return {m.key: m for m in Memory.objects.filter(user=owner)}


def model_names_every_scope(llm) -> None:
    llm.chat_answers.append(
        answer(*(memory(scope, fact, scope=scope) for scope, fact in FACTS.items()))
    )


def test_a_topic_with_a_project_and_a_persona_carries_every_scope(api, staff_api, owner, llm):
    persona_id = staff_api.post("/api/personas", {"name": "Tutor"}, format="json").json()["id"]
    project_id = new_project(api)
    topic_id = new_topic(api, project_id=project_id, persona_id=persona_id)
    post(api, topic_id, "Remember all of this, please.")
    model_names_every_scope(llm)

    accepted(extract(api, topic_id), "done")

    saved = extracted(owner)
    assert {key: m.scope for key, m in saved.items()} == {scope: scope for scope in SCOPES}
    assert str(saved["session"].topic_id) == topic_id
    assert str(saved["project"].project_id) == project_id
    assert str(saved["persona_user"].persona_id) == persona_id
    assert saved["user"].topic_id is saved["user"].project_id is saved["user"].persona_id is None


def test_a_bare_topic_puts_project_and_persona_facts_in_the_users_scope(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "Remember all of this, please.")
    model_names_every_scope(llm)

    accepted(extract(api, topic_id), "done")

    saved = extracted(owner)
    assert {key: m.scope for key, m in saved.items()} == {
        "user": "user",
        "session": "session",
        "project": "user",
        "persona_user": "user",
    }


@pytest.fixture
def every_ten(settings):
    settings.EXTRACTION_WORK_USER_MESSAGES = 10


@pytest.mark.usefixtures("every_ten")
def test_a_work_session_puts_session_facts_in_its_project(api, owner, llm):
    project_id = new_project(api)
    session_id = new_work_session(api, project_id)
    for n in range(10):
        post_work(api, session_id, f"Step {n}: run the billing migrations")
    model_names_every_scope(llm)

    accepted(extract_work(api, session_id), "done")

    saved = extracted(owner)
    assert {key: m.scope for key, m in saved.items()} == {
        "user": "user",
        "session": "project",
        "project": "project",
        "persona_user": "user",
    }
    assert str(saved["session"].project_id) == str(saved["project"].project_id) == project_id
