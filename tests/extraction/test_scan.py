"""manage.py scan_extractions (what Celery beat runs): find conversations and work sessions
with enough new activity and queue their extraction; without a broker it runs in-process."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from extraction.models import RunStatus
from memories.models import Memory, Message, Source, Status
from tests.extraction.helpers import (
    accepted,
    answer,
    extract,
    memory,
    new_project,
    new_topic,
    new_work_session,
    post,
    post_work,
    runs_of,
    transcript,
)


@pytest.fixture(autouse=True)
def thresholds(policy_settings):
    return policy_settings


@pytest.fixture
def scan(django_capture_on_commit_callbacks):
    """Run the command and the tasks it queued on commit; its output."""

    def run(*args) -> str:
        out = StringIO()
        with django_capture_on_commit_callbacks(execute=True):
            call_command("scan_extractions", *args, stdout=out)
        return out.getvalue()

    return run


def topic_with(api, user_messages: int, text: str = "Chatting about Lisbon") -> str:
    topic_id = new_topic(api)
    for n in range(user_messages):
        post(api, topic_id, f"{text} {n}")
        post(api, topic_id, f"Answer {n}", role="assistant")
    return topic_id


def test_it_queues_and_runs_extraction_for_a_topic_with_enough_messages(api, owner, llm, scan):
    busy = topic_with(api, 6)
    quiet = topic_with(api, 2)
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    output = scan()

    assert "Queued 1 conversations and 0 work sessions." in output
    assert [run.status for run in runs_of(busy)] == [RunStatus.DONE]
    assert runs_of(quiet) == []
    saved = Memory.objects.get(user=owner)
    assert (saved.value, saved.status, saved.source) == (
        "Lives in Lisbon",
        Status.PENDING_REVIEW,
        Source.CONVERSATION,
    )
    [request] = llm.chat_requests()
    assert "Chatting about Lisbon 5" in transcript(request)


def test_it_queues_a_conversation_gone_quiet(api, owner, llm, scan):
    topic_id = topic_with(api, 2)
    Message.objects.filter(topic_id=topic_id).update(
        created_at=timezone.now() - timedelta(minutes=45)
    )

    output = scan()

    assert "Queued 1 conversations" in output
    assert [run.status for run in runs_of(topic_id)] == [RunStatus.DONE]


def test_it_queues_a_dense_conversation(api, owner, llm, scan):
    topic_id = topic_with(api, 2, text="A long story about my garden and its roses. " * 12)

    assert "Queued 1 conversations" in scan()
    assert len(llm.chat_requests()) == 1
    assert runs_of(topic_id)[0].status == RunStatus.DONE


def test_a_second_scan_finds_nothing_new(api, owner, llm, scan):
    topic_with(api, 6)
    scan()

    output = scan()

    assert "Queued 0 conversations and 0 work sessions." in output
    assert len(llm.chat_requests()) == 1


def test_it_counts_only_messages_after_the_last_extraction(api, owner, llm, scan):
    topic_id = topic_with(api, 3)
    accepted(extract(api, topic_id), "done")
    for n in range(5):
        post(api, topic_id, f"Later {n}")

    assert "Queued 0 conversations" in scan()
    post(api, topic_id, "Later 5")
    assert "Queued 1 conversations" in scan()

    first, second = llm.chat_requests()
    assert "Chatting about Lisbon" not in transcript(second)
    assert "Later 0" in transcript(second)


def test_it_queues_a_work_session_of_a_managed_project_with_ten_user_messages(
    api, owner, llm, scan, settings
):
    settings.EXTRACTION_WORK_USER_MESSAGES = 10
    managed = new_work_session(api, new_project(api))
    unmanaged = new_work_session(api)
    short = new_work_session(api, new_project(api, "Other"))
    for n in range(10):
        post_work(api, managed, f"Deploy step {n}")
        post_work(api, unmanaged, f"Deploy step {n}")
    for n in range(9):
        post_work(api, short, f"Deploy step {n}")
    llm.chat_answers.append(answer(memory("deploys", "Deploys on Fridays")))

    output = scan()

    assert "Queued 0 conversations and 1 work sessions." in output
    assert [run.status for run in runs_of(managed)] == [RunStatus.DONE]
    assert runs_of(unmanaged) == []
    assert runs_of(short) == []
    assert Memory.objects.get(user=owner).source == Source.WORK


def test_the_limit_caps_how_many_topics_one_scan_looks_at(api, owner, llm, scan):
    for _ in range(3):
        topic_with(api, 6)

    assert "Queued 2 conversations" in scan("--limit", "2")
    assert len(llm.chat_requests()) == 2
    assert "Queued 1 conversations" in scan()
