"""POST /api/memories/extract-work/{session_id}: work sessions extract every 10 user messages,
and only inside a managed project."""

import uuid

import pytest

from extraction.models import RunStatus
from memories.models import Memory, Source, Status
from tests.extraction.helpers import (
    accepted,
    answer,
    extract_work,
    memory,
    new_project,
    new_work_session,
    post_work,
    runs_of,
    transcript,
)
from tests.memories.helpers import assert_error


@pytest.fixture(autouse=True)
def every_ten(settings):
    settings.EXTRACTION_WORK_USER_MESSAGES = 10


def session_with(api, user_messages: int, *, project: bool = True) -> str:
    session_id = new_work_session(api, new_project(api) if project else None)
    for n in range(user_messages):
        post_work(api, session_id, f"Step {n}: run the billing migrations")
        post_work(api, session_id, f"Done with step {n}", role="assistant")
    return session_id


def test_nine_new_user_messages_are_skipped_without_a_model_call(api, owner, llm):
    session_id = session_with(api, 9)

    body = accepted(extract_work(api, session_id), "skipped")

    assert "9" in body["reason"] and "10" in body["reason"]
    assert body["result"] == {"created": 0, "merged": 0, "skipped": 0}
    assert llm.chat_requests() == []
    assert not Memory.objects.exists()
    assert [run.status for run in runs_of(session_id)] == [RunStatus.SKIPPED]


def test_ten_new_user_messages_are_extracted_with_source_work(api, owner, llm):
    session_id = session_with(api, 10)
    llm.chat_answers.append(
        answer(
            memory("shell", "Uses fish as the shell"),
            memory("migrations", "Billing migrations run in ten steps", scope="project"),
        )
    )

    body = accepted(extract_work(api, session_id), "done")

    assert body["result"] == {"created": 2, "merged": 0, "skipped": 0}
    [request] = llm.chat_requests()
    assert "Step 0: run the billing migrations" in transcript(request)
    assert "Done with step 9" in transcript(request)
    rows = {m.key: m for m in Memory.objects.filter(user=owner)}
    assert {m.source for m in rows.values()} == {Source.WORK}
    assert {m.status for m in rows.values()} == {Status.PENDING_REVIEW}
    assert rows["shell"].scope == "user"
    assert rows["migrations"].scope == "project"
    assert rows["migrations"].project_id is not None


def test_assistant_messages_do_not_count_towards_the_ten(api, owner, llm):
    session_id = new_work_session(api, new_project(api))
    for n in range(9):
        post_work(api, session_id, f"Step {n}")
    for n in range(20):
        post_work(api, session_id, f"Tool output {n}", role="assistant")

    accepted(extract_work(api, session_id), "skipped")

    assert llm.chat_requests() == []


def test_a_session_without_a_managed_project_is_skipped_without_a_model_call(api, owner, llm):
    session_id = session_with(api, 12, project=False)

    body = accepted(extract_work(api, session_id), "skipped")

    assert "project" in body["reason"]
    assert llm.chat_requests() == []
    assert not Memory.objects.exists()


def test_the_count_starts_again_after_an_extraction(api, owner, llm):
    session_id = session_with(api, 10)
    accepted(extract_work(api, session_id), "done")
    for n in range(9):
        post_work(api, session_id, f"Second batch {n}")

    accepted(extract_work(api, session_id), "skipped")
    post_work(api, session_id, "Second batch 9")
    accepted(extract_work(api, session_id), "done")

    first, second = llm.chat_requests()
    assert "Step 0" not in transcript(second)
    assert "Second batch 0" in transcript(second)


def test_a_failing_model_answers_202_failed_for_a_work_session(api, owner, llm, settings):
    session_id = session_with(api, 10)
    llm.chat_answers.extend([("status", 500)] * settings.EXTRACTION_LLM_ATTEMPTS)

    accepted(extract_work(api, session_id), "failed")

    assert not Memory.objects.exists()
    assert [run.status for run in runs_of(session_id)] == [RunStatus.FAILED]


def test_it_answers_404_for_another_users_work_session(api, other_api, llm):
    session_id = session_with(other_api, 10)

    assert_error(extract_work(api, session_id), 404, "session_id")
    assert llm.chat_requests() == []


def test_it_answers_404_for_an_unknown_work_session(api, llm):
    assert_error(extract_work(api, uuid.uuid4()), 404, "session_id")


def test_it_answers_404_naming_session_id_for_a_non_uuid(api, llm):
    assert_error(extract_work(api, "12345"), 404, "session_id")
