"""The trigger policy (extraction/policy.py) as plain functions, and the automatic path it
drives: posting user messages to a topic extracts once the policy says so."""

from datetime import UTC, datetime, timedelta

import pytest

from extraction.models import RunStatus
from extraction.policy import Activity, conversation_decision, work_session_decision
from memories.models import Memory, Source, Status
from tests.extraction.helpers import answer, memory, new_topic, post, runs_of

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
JUST_NOW = NOW - timedelta(seconds=10)


def activity(count: int, *, chars_each: int = 40, quiet_minutes: float | None = 0.2) -> Activity:
    return Activity(
        new_user_messages=count,
        new_user_chars=count * chars_each,
        last_message_at=None if quiet_minutes is None else NOW - timedelta(minutes=quiet_minutes),
    )


@pytest.fixture(autouse=True)
def thresholds(policy_settings):
    """USER_MESSAGES 6; IDLE 30 minutes with 2 messages; DENSE 400 chars with 2 messages."""
    return policy_settings


# --- conversation_decision ------------------------------------------------------------------


def test_enough_new_user_messages_trigger_extraction():
    decision = conversation_decision(activity(6), now=NOW)

    assert decision.extract is True
    assert "6" in decision.reason


def test_one_message_short_of_the_threshold_does_not_trigger():
    decision = conversation_decision(activity(5), now=NOW)

    assert decision.extract is False
    assert decision.reason


def test_the_threshold_is_a_setting(settings):
    settings.EXTRACTION_USER_MESSAGES = 3

    assert conversation_decision(activity(3), now=NOW).extract is True


def test_a_quiet_conversation_with_the_minimum_messages_triggers_extraction():
    decision = conversation_decision(activity(2, quiet_minutes=30), now=NOW)

    assert decision.extract is True
    assert "quiet" in decision.reason


def test_a_quiet_conversation_with_too_few_messages_does_not_trigger():
    assert conversation_decision(activity(1, quiet_minutes=600), now=NOW).extract is False


def test_a_conversation_not_yet_quiet_long_enough_does_not_trigger():
    assert conversation_decision(activity(2, quiet_minutes=29), now=NOW).extract is False


def test_the_idle_time_is_a_setting(settings):
    settings.EXTRACTION_IDLE_MINUTES = 5

    assert conversation_decision(activity(2, quiet_minutes=6), now=NOW).extract is True


def test_dense_messages_trigger_extraction_before_the_count_or_the_idle_time():
    decision = conversation_decision(activity(2, chars_each=400), now=NOW)

    assert decision.extract is True
    assert "dense" in decision.reason


def test_short_messages_are_not_dense():
    assert conversation_decision(activity(2, chars_each=399), now=NOW).extract is False


def test_one_long_message_is_not_dense_enough():
    assert conversation_decision(activity(1, chars_each=5000), now=NOW).extract is False


def test_not_enough_activity_does_not_trigger():
    decision = conversation_decision(activity(3, chars_each=50, quiet_minutes=1), now=NOW)

    assert decision.extract is False
    assert "not enough" in decision.reason


def test_no_new_user_messages_never_trigger():
    decision = conversation_decision(
        Activity(new_user_messages=0, new_user_chars=0, last_message_at=NOW - timedelta(days=9)),
        now=NOW,
    )

    assert decision.extract is False
    assert "no new" in decision.reason


def test_no_known_last_message_time_still_allows_the_count_rule():
    assert conversation_decision(activity(6, quiet_minutes=None), now=NOW).extract is True
    assert conversation_decision(activity(2, quiet_minutes=None), now=NOW).extract is False


# --- work_session_decision ------------------------------------------------------------------


def test_a_work_session_in_a_project_extracts_every_ten_user_messages():
    assert work_session_decision(has_project=True, new_user_messages=10).extract is True
    assert work_session_decision(has_project=True, new_user_messages=9).extract is False


def test_a_work_session_without_a_project_never_extracts():
    decision = work_session_decision(has_project=False, new_user_messages=50)

    assert decision.extract is False
    assert "project" in decision.reason


# --- the automatic path: posting messages ----------------------------------------------------


def post_committed(api, topic_id, content, capture, role="user"):
    """Post a message and run what the post queued on commit (the hook, then the task)."""
    with capture(execute=True):
        post(api, topic_id, content, role=role)


def test_posting_user_messages_up_to_the_threshold_extracts_in_process(
    api, owner, llm, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
    for n in range(5):
        post_committed(api, topic_id, f"Short message {n}", django_capture_on_commit_callbacks)
        post_committed(
            api, topic_id, f"Reply {n}", django_capture_on_commit_callbacks, role="assistant"
        )
    assert llm.chat_requests() == []
    assert runs_of(topic_id) == []

    post_committed(api, topic_id, "I live in Lisbon.", django_capture_on_commit_callbacks)

    [request] = llm.chat_requests()
    assert "Short message 0" in request["messages"][-1]["content"]
    assert "I live in Lisbon." in request["messages"][-1]["content"]
    [run] = runs_of(topic_id)
    assert run.status == RunStatus.DONE
    saved = Memory.objects.get(user=owner)
    assert (saved.value, saved.status, saved.source) == (
        "Lives in Lisbon",
        Status.PENDING_REVIEW,
        Source.CONVERSATION,
    )


def test_posting_below_the_threshold_calls_nothing(
    api, owner, llm, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)
    for n in range(5):
        post_committed(api, topic_id, f"Short message {n}", django_capture_on_commit_callbacks)

    assert llm.chat_requests() == []
    assert runs_of(topic_id) == []
    assert not Memory.objects.exists()


def test_assistant_and_system_messages_do_not_count_towards_the_threshold(
    api, owner, llm, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)
    for n in range(4):
        post_committed(api, topic_id, f"User {n}", django_capture_on_commit_callbacks)
    for n in range(10):
        post_committed(
            api, topic_id, f"Reply {n}", django_capture_on_commit_callbacks, role="assistant"
        )
        post_committed(
            api, topic_id, f"System {n}", django_capture_on_commit_callbacks, role="system"
        )

    assert llm.chat_requests() == []


def test_a_dense_conversation_extracts_after_two_long_user_messages(
    api, owner, llm, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)
    long_text = "I am planning a long trip through Portugal next spring. " * 10

    post_committed(api, topic_id, long_text, django_capture_on_commit_callbacks)
    assert llm.chat_requests() == []
    post_committed(api, topic_id, long_text, django_capture_on_commit_callbacks)

    assert len(llm.chat_requests()) == 1


def test_the_automatic_path_starts_counting_again_after_an_extraction(
    api, owner, llm, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)
    for n in range(6):
        post_committed(api, topic_id, f"Batch one {n}", django_capture_on_commit_callbacks)
    assert len(llm.chat_requests()) == 1

    for n in range(5):
        post_committed(api, topic_id, f"Batch two {n}", django_capture_on_commit_callbacks)
    assert len(llm.chat_requests()) == 1

    post_committed(api, topic_id, "Batch two 5", django_capture_on_commit_callbacks)
    second = llm.chat_requests()[-1]["messages"][-1]["content"]
    assert len(llm.chat_requests()) == 2
    assert "Batch one" not in second
    assert "Batch two 0" in second
