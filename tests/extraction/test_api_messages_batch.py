"""POST /api/topics/{id}/messages and /api/work-sessions/{id}/messages with {"messages": [...]}:
many messages in one request, written all or nothing in one transaction, the trigger policy
asked once, and the extraction it started named in the answer.

The tests that read `extraction` commit for real (transaction=True): the hook runs once the
messages are committed, as in production, where no transaction wraps the request."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from extraction.models import RunStatus
from memories.models import Memory, Message, Status, WorkSessionMessage
from tests.extraction.helpers import (
    answer,
    conversation,
    memory,
    new_project,
    new_topic,
    new_work_session,
    run_of,
    run_on_its_way,
    runs_of,
    transcript,
)
from tests.memories.helpers import assert_error

committed = pytest.mark.django_db(transaction=True)


def post_batch(api, path: str, messages) -> dict:
    response = api.post(path, {"messages": messages}, format="json")
    assert response.status_code == 201, response.content[:500]
    return response.json()


def topic_messages(topic_id: str) -> str:
    return f"/api/topics/{topic_id}/messages"


@pytest.fixture(autouse=True)
def thresholds(policy_settings):
    return policy_settings


# --- writing ------------------------------------------------------------------------------------


def test_it_appends_every_message_in_input_order_with_ascending_ids(api, owner):
    topic_id = new_topic(api)
    messages = [
        {"role": "system", "content": "You are Ada."},
        *conversation(3),
        {"role": "user", "content": "  Keep my spaces.  "},
    ]

    body = post_batch(api, topic_messages(topic_id), messages)

    assert set(body) == {"data", "extraction"}
    data = body["data"]
    assert [(m["role"], m["content"]) for m in data] == [
        (m["role"], m["content"]) for m in messages
    ]
    ids = [m["id"] for m in data]
    assert ids == sorted(ids) and len(set(ids)) == len(messages)
    stored = Message.objects.filter(topic_id=topic_id).order_by("id")
    assert [(m.id, m.role, m.content) for m in stored] == [
        (m["id"], m["role"], m["content"]) for m in data
    ]
    listed = api.get(topic_messages(topic_id)).json()["data"]
    assert [m["id"] for m in listed] == ids


def test_a_work_session_takes_a_batch_too(api, owner):
    session_id = new_work_session(api)

    body = post_batch(api, f"/api/work-sessions/{session_id}/messages", conversation(2))

    assert [m["content"] for m in body["data"]] == [m["content"] for m in conversation(2)]
    assert WorkSessionMessage.objects.filter(session_id=session_id).count() == 4


def test_five_hundred_messages_are_one_batch(api, owner):
    topic_id = new_topic(api)
    messages = [{"role": "user", "content": f"m{n}"} for n in range(500)]

    body = post_batch(api, topic_messages(topic_id), messages)

    assert len(body["data"]) == 500
    assert Message.objects.filter(topic_id=topic_id).count() == 500


def test_an_invalid_item_names_its_index_and_field_and_nothing_is_written(api, owner):
    topic_id = new_topic(api)
    messages = [
        *conversation(1),
        {"role": "robot", "content": "beep"},
        {"role": "user", "content": "fine"},
        {"role": "user", "content": "   "},
        "not an object",
        {"role": "user", "content": "hi", "topic_id": topic_id},
        {"role": "user"},
    ]

    response = api.post(topic_messages(topic_id), {"messages": messages}, format="json")

    body = assert_error(response, 400, "messages[4].content")
    assert set(body["fields"]) == {
        "messages[2].role",
        "messages[4].content",
        "messages[5]",
        "messages[6].topic_id",
        "messages[7].content",
    }
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"messages": []}, {"messages"}),
        ({"messages": "hello"}, {"messages"}),
        ({"messages": {"role": "user", "content": "hi"}}, {"messages"}),
        ({"messages": None}, {"messages"}),
        ({"messages": [{"role": "user", "content": "x"}] * 501}, {"messages"}),
        ({"messages": conversation(1), "role": "user"}, {"role"}),
    ],
    ids=["empty", "a string", "an object", "null", "501 messages", "mixed with one message"],
)
def test_a_batch_that_is_not_a_list_of_1_to_500_is_400_naming_messages(api, owner, body, fields):
    topic_id = new_topic(api)

    error = assert_error(api.post(topic_messages(topic_id), body, format="json"), 400)

    assert set(error["fields"]) == fields
    assert not Message.objects.exists()


def test_the_single_message_body_still_answers_one_message_object(api, owner):
    topic_id = new_topic(api)

    response = api.post(
        topic_messages(topic_id), {"role": "user", "content": "Hello there"}, format="json"
    )

    assert response.status_code == 201, response.content[:500]
    body = response.json()
    # The message's own fields, and what happened to extraction (as a batch answers it).
    assert set(body) == {"id", "role", "content", "created_at", "extraction"}
    assert (body["role"], body["content"]) == ("user", "Hello there")
    assert Message.objects.get().id == body["id"]


def test_another_users_topic_answers_404_and_nothing_is_written(api, other_api):
    topic_id = new_topic(other_api)

    response = api.post(topic_messages(topic_id), {"messages": conversation(2)}, format="json")

    assert_error(response, 404, "id")
    assert not Message.objects.exists()


# --- the extraction a batch starts --------------------------------------------------------------


@committed
def test_a_batch_of_40_is_one_insert_and_starts_one_extraction_whose_run_can_be_followed(
    api, owner, llm
):
    topic_id = new_topic(api)
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon"), memory("bees", "Keeps bees")))

    with CaptureQueriesContext(connection) as captured:
        body = post_batch(api, topic_messages(topic_id), conversation(20))

    inserts = [q for q in captured if q["sql"].startswith('INSERT INTO "memories_message"')]
    assert len(inserts) == 1
    run = run_of(api, body["extraction"]["task_id"])
    # The post answers the run as the runs API shows it.
    assert body["extraction"] == run
    assert (run["status"], run["created"], run["error"]) == ("done", 2, None)
    pending = Memory.objects.filter(user=owner, status=Status.PENDING_REVIEW)
    assert sorted(run["memory_ids"]) == sorted(str(m.id) for m in pending)
    # The policy was asked once, after all 40 were committed: one run read them all.
    [row] = runs_of(topic_id)
    ids = [m["id"] for m in body["data"]]
    assert (row.from_message_id, row.to_message_id) == (ids[0], ids[-1])
    [request] = llm.chat_requests()
    assert "part 0." in transcript(request) and "part 19." in transcript(request)


@committed
def test_a_batch_below_the_threshold_starts_no_extraction(api, owner, llm):
    topic_id = new_topic(api)

    body = post_batch(api, topic_messages(topic_id), conversation(5))

    assert body["extraction"] == {
        "status": "not_triggered",
        "reason": "Not due yet: not enough new activity (5 new user messages); "
        f"POST /api/memories/extract/{topic_id} extracts now.",
    }
    assert runs_of(topic_id) == []
    assert llm.chat_requests() == []


@committed
def test_a_batch_without_user_messages_asks_no_policy(api, owner, llm):
    topic_id = new_topic(api)
    replies = [{"role": "assistant", "content": f"Reply {n}"} for n in range(40)]

    body = post_batch(api, topic_messages(topic_id), replies)

    assert body["extraction"] == {
        "status": "not_triggered",
        "reason": "Only user messages trigger extraction, and this post had none.",
    }
    assert runs_of(topic_id) == []


@committed
def test_a_batch_to_a_topic_whose_extraction_is_on_its_way_names_that_run(api, owner, llm):
    topic_id = new_topic(api)
    on_its_way = run_on_its_way(owner, topic_id)

    body = post_batch(api, topic_messages(topic_id), conversation(8))

    assert body["extraction"] == run_of(api, on_its_way.task_id)
    assert (body["extraction"]["task_id"], body["extraction"]["status"]) == (
        on_its_way.task_id,
        "queued",
    )
    assert runs_of(topic_id) == [on_its_way]
    assert llm.chat_requests() == []


@committed
def test_a_work_session_batch_of_ten_user_messages_starts_its_extraction(api, owner, llm):
    session_id = new_work_session(api, new_project(api))
    llm.chat_answers.append(answer(memory("deploys", "Deploys on Fridays")))

    body = post_batch(
        api,
        f"/api/work-sessions/{session_id}/messages",
        conversation(10, text="Deploy step"),
    )

    run = run_of(api, body["extraction"]["task_id"])
    assert run["source"] == {"kind": "work_session", "id": session_id}
    assert (run["status"], run["created"]) == (RunStatus.DONE, 1)


@committed
def test_a_batch_for_a_persona_with_memory_off_starts_no_extraction(api, owner, staff_api, llm):
    persona = staff_api.post(
        "/api/personas", {"name": "Ada", "memory_enabled": False}, format="json"
    ).json()
    topic_id = new_topic(api, persona_id=persona["id"])

    body = post_batch(api, topic_messages(topic_id), conversation(10))

    assert body["extraction"] == {
        "status": "not_triggered",
        "reason": "This topic's persona has memory_enabled off.",
    }
    assert runs_of(topic_id) == []


@committed
def test_a_hook_that_raises_is_logged_and_the_post_still_succeeds(api, owner, settings, caplog):
    # A misconfigured hook: a real function that takes no kind or source_id.
    settings.MESSAGE_POSTED_HOOKS = [
        "extraction.sources.extraction_enabled",
        "extraction.triggers.message_posted",
    ]
    topic_id = new_topic(api)

    body = post_batch(api, topic_messages(topic_id), conversation(8))

    assert len(body["data"]) == 16
    assert Message.objects.filter(topic_id=topic_id).count() == 16
    assert "extraction_enabled() got an unexpected keyword argument" in caplog.text
    assert body["extraction"]["status"] == "done"
