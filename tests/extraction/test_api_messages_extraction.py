"""Every messages post, one message or a batch, says what happened to extraction in the same
`extraction` shape: the run it started (as GET /api/extraction-runs/{task_id} shows it) or
{"status": "not_triggered", "reason"}; a failed run's message is `error` everywhere.

Committed for real (transaction=True): the hook runs once the messages are committed."""

import pytest

from extraction.models import RunStatus
from memories.models import ConfigEntry
from tests.extraction.helpers import (
    accepted,
    answer,
    conversation,
    extract,
    memory,
    new_project,
    new_topic,
    new_work_session,
    run_of,
    runs_of,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def thresholds(policy_settings):
    return policy_settings


def post_one(api, path: str, role: str = "user", content: str = "I keep bees") -> dict:
    response = api.post(path, {"role": role, "content": content}, format="json")
    assert response.status_code == 201, response.content[:500]
    return response.json()


def test_one_message_below_the_threshold_says_why_nothing_started(api, owner, llm):
    topic_id = new_topic(api)

    body = post_one(api, f"/api/topics/{topic_id}/messages")

    assert body["extraction"] == {
        "status": "not_triggered",
        "reason": "Not due yet: not enough new activity (1 new user messages); "
        f"POST /api/memories/extract/{topic_id} extracts now.",
    }
    assert runs_of(topic_id) == []


def test_the_message_that_makes_it_due_answers_the_run_it_started(api, owner, llm):
    topic_id = new_topic(api)
    api.post(f"/api/topics/{topic_id}/messages", {"messages": conversation(5)}, format="json")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    body = post_one(api, f"/api/topics/{topic_id}/messages", content="I live in Lisbon")

    [row] = runs_of(topic_id)
    assert body["extraction"] == run_of(api, row.task_id)
    assert (body["extraction"]["status"], body["extraction"]["created"]) == (RunStatus.DONE, 1)


def test_an_assistant_message_alone_triggers_nothing_and_says_so(api, owner, llm):
    topic_id = new_topic(api)

    body = post_one(api, f"/api/topics/{topic_id}/messages", role="assistant")

    assert body["extraction"]["status"] == "not_triggered"
    assert "Only user messages" in body["extraction"]["reason"]


def test_with_extraction_switched_off_a_post_says_so(api, owner, llm):
    ConfigEntry.objects.create(key="memory_extraction_enabled", value=False)
    topic_id = new_topic(api)

    body = post_one(api, f"/api/topics/{topic_id}/messages")

    assert body["extraction"]["status"] == "not_triggered"
    assert "memory_extraction_enabled" in body["extraction"]["reason"]


def test_a_work_session_outside_a_project_says_why(api, owner, llm):
    session_id = new_work_session(api)

    body = post_one(api, f"/api/work-sessions/{session_id}/messages")

    assert body["extraction"] == {
        "status": "not_triggered",
        "reason": "Not due yet: the work session belongs to no managed project; "
        f"POST /api/memories/extract-work/{session_id} extracts now.",
    }


def test_a_work_session_message_in_a_project_below_its_count_says_the_count(api, owner, llm):
    session_id = new_work_session(api, new_project(api))

    body = post_one(api, f"/api/work-sessions/{session_id}/messages")

    assert "1 of 10 new user messages" in body["extraction"]["reason"]


def test_a_failed_run_names_its_message_error_in_every_answer(api, owner, llm, settings):
    topic_id = new_topic(api)
    llm.chat_answers.extend([("status", 500)] * settings.EXTRACTION_LLM_ATTEMPTS)

    posted = api.post(
        f"/api/topics/{topic_id}/messages", {"messages": conversation(6)}, format="json"
    ).json()

    run = run_of(api, posted["extraction"]["task_id"])
    assert posted["extraction"] == run
    assert run["status"] == RunStatus.FAILED
    assert run["error"] and run["reason"] is None
    # The extract endpoint reports a failure the same way (the messages are still new).
    llm.chat_answers.extend([("status", 500)] * settings.EXTRACTION_LLM_ATTEMPTS)
    extracted = accepted(extract(api, topic_id), "failed")
    assert extracted["error"] and extracted["reason"] is None
