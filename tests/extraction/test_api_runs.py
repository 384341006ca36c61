"""GET /api/extraction-runs and /api/extraction-runs/{task_id}: the task id of every
extraction answer can be followed to the run's outcome. Tasks run in process here;
tests/extraction/test_celery_worker.py follows runs through a real worker."""

import logging
import uuid
from datetime import datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from extraction import services
from extraction.models import ExtractionRun, RunStatus
from extraction.tasks import extract_topic_task
from memories.accounts.keys import api_key_create
from memories.erasure import user_erase
from memories.models import Memory, Status, Topic
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
    run_of,
    run_on_its_way,
    runs_of,
)
from tests.memories.helpers import assert_error, make_memory

RUNS = "/api/extraction-runs"
TIMES = ("created_at", "started_at", "finished_at")


def extracted_topic(api, llm, *memories: dict, text: str = "I moved to Lisbon.") -> tuple:
    """A topic with one message, extracted through the API; the topic id and the answer."""
    topic_id = new_topic(api)
    post(api, topic_id, text)
    llm.chat_answers.append(answer(*memories))
    return topic_id, extract(api, topic_id)


# --- one run ------------------------------------------------------------------------------------


def test_an_extraction_answer_names_a_run_that_reads_done_with_counts_and_memory_ids(
    api, owner, llm
):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    topic_id, response = extracted_topic(
        api,
        llm,
        memory("city", "Lives in Porto"),
        memory("pet", "Has a cat named Miso"),
        memory("cat", "Has a cat named Miso"),
        text="I moved to Porto with my cat Miso.",
    )
    task_id = accepted(response, "done")["task_id"]

    run = run_of(api, task_id)

    proposed = Memory.objects.filter(user=owner, status=Status.PENDING_REVIEW)
    porto = proposed.get(value="Lives in Porto")
    assert porto.supersedes_id == old.id
    cat = proposed.get(value="Has a cat named Miso")
    created_at, started_at, finished_at = (run.pop(f) for f in TIMES)
    assert run == {
        "task_id": task_id,
        "status": "done",
        "source": {"kind": "topic", "id": topic_id},
        "created": 1,
        "merged": 1,
        "skipped": 1,
        "memory_ids": [str(porto.id), str(cat.id)],
        "error": None,
        "reason": None,
    }
    assert created_at <= started_at <= finished_at
    [row] = runs_of(topic_id)
    assert (row.task_id, row.user_id) == (task_id, owner.id)


def test_a_work_session_extraction_is_followed_by_its_task_id_too(api, owner, llm, settings):
    settings.EXTRACTION_WORK_USER_MESSAGES = 10
    session_id = new_work_session(api, new_project(api))
    for n in range(10):
        post_work(api, session_id, f"Step {n}: deploy with the blue-green script")
    llm.chat_answers.append(answer(memory("deploys", "Deploys blue-green")))

    task_id = accepted(extract_work(api, session_id), "done")["task_id"]

    run = run_of(api, task_id)
    assert run["source"] == {"kind": "work_session", "id": session_id}
    assert (run["status"], run["created"]) == ("done", 1)
    assert run["memory_ids"] == [str(Memory.objects.get(user=owner).id)]


def test_a_skipped_run_shows_its_reason_and_no_error(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "Only the system prompt follows.", role="system")

    body = accepted(extract(api, topic_id), "skipped")

    run = run_of(api, body["task_id"])
    assert run["status"] == "skipped"
    assert run["reason"] == body["reason"] == "no new messages"
    assert run["error"] is None
    assert run["memory_ids"] == []
    assert run["finished_at"]
    assert llm.chat_requests() == []


def test_a_failed_run_shows_its_error_and_no_reason(api, owner, llm):
    llm.chat_answers.append(("status", 400))
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon.")

    body = accepted(extract(api, topic_id), "failed")

    run = run_of(api, body["task_id"])
    assert run["status"] == "failed"
    assert "BadRequest" in run["error"] and "400" in run["error"]
    assert run["reason"] is None
    assert (run["created"], run["memory_ids"]) == (0, [])
    assert not Memory.objects.exists()


def test_another_users_run_answers_404_naming_task_id(api, other_api, llm):
    _, response = extracted_topic(other_api, llm, memory("city", "Lives in Lisbon"))
    task_id = accepted(response, "done")["task_id"]

    body = assert_error(api.get(f"{RUNS}/{task_id}"), 404, "task_id")

    assert task_id in body["detail"]
    assert api.get(RUNS).json()["data"] == []


def test_an_unknown_task_id_answers_404_naming_it(api):
    assert_error(api.get(f"{RUNS}/{uuid.uuid4()}"), 404, "task_id")
    assert_error(api.get(f"{RUNS}/not-a-task"), 404, "task_id")


def test_staff_see_every_users_runs_in_the_list_and_by_task_id(api, other_api, staff_api, llm):
    _, mine = extracted_topic(api, llm, memory("city", "Lives in Lisbon"))
    _, theirs = extracted_topic(other_api, llm, memory("pet", "Has a dog"))
    task_ids = [accepted(mine, "done")["task_id"], accepted(theirs, "done")["task_id"]]

    listing = staff_api.get(RUNS).json()

    assert [run["task_id"] for run in listing["data"]] == task_ids[::-1]
    assert listing["count"] == 2
    assert all(run_of(staff_api, task_id)["status"] == "done" for task_id in task_ids)


def test_it_needs_authentication(anon_api, api, llm):
    _, response = extracted_topic(api, llm, memory("city", "Lives in Lisbon"))
    task_id = accepted(response, "done")["task_id"]

    assert anon_api.get(RUNS).status_code in (401, 403)
    assert anon_api.get(f"{RUNS}/{task_id}").status_code in (401, 403)


def test_a_read_only_key_follows_the_runs_of_its_end_user(db, llm):
    _, raw_key = api_key_create(name="chat backend", scopes=("read", "write"))
    _, read_key = api_key_create(name="dashboard", scopes=("read",))
    writer, reader = APIClient(), APIClient()
    writer.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}", HTTP_X_USER_ID="ext-alice")
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {read_key}", HTTP_X_USER_ID="ext-alice")
    _, response = extracted_topic(writer, llm, memory("city", "Lives in Lisbon"))
    task_id = accepted(response, "done")["task_id"]

    assert run_of(reader, task_id)["status"] == "done"
    assert [run["task_id"] for run in reader.get(RUNS).json()["data"]] == [task_id]
    assert_error(reader.post(f"/api/memories/extract/{uuid.uuid4()}"), 403, "scope")


# --- the list -----------------------------------------------------------------------------------


def test_the_list_shows_the_callers_runs_newest_first_with_their_counts(api, owner, llm):
    done_topic, done = extracted_topic(
        api, llm, memory("city", "Lives in Lisbon"), memory("pet", "Has a cat")
    )
    skipped = extract(api, done_topic)
    llm.chat_answers.append(("status", 400))
    failed_topic = new_topic(api)
    post(api, failed_topic, "I keep bees.")
    failed = extract(api, failed_topic)
    task_ids = [
        accepted(done, "done")["task_id"],
        accepted(skipped, "skipped")["task_id"],
        accepted(failed, "failed")["task_id"],
    ]

    response = api.get(RUNS)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "count", "next", "previous"}
    assert body["count"] == 3
    assert [run["task_id"] for run in body["data"]] == task_ids[::-1]
    assert [(r["status"], r["created"], len(r["memory_ids"])) for r in body["data"]] == [
        ("failed", 0, 0),
        ("skipped", 0, 0),
        ("done", 2, 2),
    ]
    assert body["data"][0]["error"] and body["data"][1]["reason"] == "no new messages"


def test_the_list_filters_by_status_source_kind_and_source_id(api, owner, llm, settings):
    first, _ = extracted_topic(api, llm, memory("city", "Lives in Lisbon"))
    accepted(extract(api, first), "skipped")
    second, _ = extracted_topic(api, llm, memory("pet", "Has a cat"))
    session_id = new_work_session(api)
    accepted(extract_work(api, session_id), "skipped")

    def listed(**params) -> list[tuple[str, str]]:
        response = api.get(RUNS, params)
        assert response.status_code == 200, response.content[:500]
        return [(r["source"]["id"], r["status"]) for r in response.json()["data"]]

    assert listed(status="done") == [(second, "done"), (first, "done")]
    assert listed(status="skipped", source_kind="topic") == [(first, "skipped")]
    assert listed(source_kind="work_session") == [(session_id, "skipped")]
    assert listed(source_id=first) == [(first, "skipped"), (first, "done")]
    assert listed(status="queued") == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "finished"}, "status"),
        ({"source_kind": "persona"}, "source_kind"),
        ({"source_id": "not-a-uuid"}, "source_id"),
        ({"page_size": "0"}, "page_size"),
    ],
)
def test_a_bad_filter_answers_400_naming_it(api, params, field):
    assert_error(api.get(RUNS, params), 400, field)


def test_the_list_runs_the_same_number_of_queries_for_3_and_30_runs(api, owner):
    topic = Topic.objects.create(user=owner)

    def queries_for(count: int) -> tuple[int, int]:
        ExtractionRun.objects.all().delete()
        for n in range(count):
            run_on_its_way(
                owner,
                str(topic.id),
                status=RunStatus.DONE,
                created=1,
                memory_ids=[str(uuid.uuid4())],
                started_at=timezone.now(),
                finished_at=timezone.now(),
                reason=f"run {n}",
            )
        with CaptureQueriesContext(connection) as captured:
            response = api.get(RUNS, {"page_size": 50})
        assert response.status_code == 200
        return len(captured), len(response.json()["data"])

    few, few_listed = queries_for(3)
    many, many_listed = queries_for(30)

    assert (few_listed, many_listed) == (3, 30)
    assert few == many


# --- one extraction of a source at a time -------------------------------------------------------


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING])
def test_an_extraction_already_on_its_way_is_answered_instead_of_queueing_another(
    api, owner, llm, status
):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon.")
    on_its_way = run_on_its_way(owner, topic_id, status=status, started_at=timezone.now())

    body = accepted(extract(api, topic_id), status)

    assert body == {"task_id": on_its_way.task_id, "status": status}
    assert runs_of(topic_id) == [on_its_way]
    assert llm.chat_requests() == []


def test_a_run_queued_longer_ago_than_the_claim_time_holds_nothing_back(api, owner, llm, settings):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon.")
    lost = run_on_its_way(owner, topic_id)
    ExtractionRun.objects.filter(id=lost.id).update(
        created_at=timezone.now() - timedelta(seconds=settings.EXTRACTION_CLAIM_SECONDS + 1)
    )
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    body = accepted(extract(api, topic_id), "done")

    assert body["task_id"] != lost.task_id
    assert run_of(api, lost.task_id)["status"] == "queued"
    assert len(llm.chat_requests()) == 1


# --- runs of the automatic paths ----------------------------------------------------------------


def test_posting_the_threshold_message_starts_a_run_its_owner_can_follow(
    api, owner, llm, policy_settings, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
    for n in range(6):
        with django_capture_on_commit_callbacks(execute=True):
            post(api, topic_id, f"I live in Lisbon, message {n}.")

    [run] = api.get(RUNS).json()["data"]

    assert run["source"] == {"kind": "topic", "id": topic_id}
    assert (run["status"], run["created"]) == ("done", 1)
    assert run["memory_ids"] == [str(Memory.objects.get(user=owner).id)]


def test_a_scan_starts_runs_that_can_be_followed(
    api, owner, llm, policy_settings, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)
    for n in range(6):
        post(api, topic_id, f"I live in Lisbon, message {n}.")

    with django_capture_on_commit_callbacks(execute=True):
        call_command("scan_extractions", stdout=StringIO())

    [run] = api.get(RUNS).json()["data"]
    assert run["source"]["id"] == topic_id
    assert run["status"] == "done"


# --- deliveries of one task ---------------------------------------------------------------------


def topic_with_a_run(api, owner, llm, **fields) -> tuple[str, ExtractionRun]:
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
    return topic_id, run_on_its_way(owner, topic_id, **fields)


def test_a_task_delivered_again_after_its_run_finished_leaves_the_run_as_it_was(api, owner, llm):
    topic_id, response = extracted_topic(api, llm, memory("city", "Lives in Lisbon"))
    task_id = accepted(response, "done")["task_id"]
    post(api, topic_id, "I also keep bees.")  # so that running again would have work to do
    llm.chat_answers.append(answer(memory("hobby", "Keeps bees")))
    before = run_of(api, task_id)

    extract_topic_task.apply(args=[topic_id, False], task_id=task_id)

    assert run_of(api, task_id) == before
    assert len(llm.chat_requests()) == 1
    assert Memory.objects.count() == 1


def test_a_delivery_that_finds_its_run_running_leaves_it_to_the_worker_on_it(api, owner, llm):
    topic_id, running = topic_with_a_run(
        api, owner, llm, status=RunStatus.RUNNING, started_at=timezone.now()
    )

    extract_topic_task.apply(args=[topic_id, False], task_id=running.task_id)

    run = run_of(api, running.task_id)
    assert (run["status"], run["finished_at"]) == ("running", None)
    assert llm.chat_requests() == []
    assert not Memory.objects.exists()


def test_a_retry_takes_its_running_run_over_and_finishes_it(api, owner, llm):
    topic_id, running = topic_with_a_run(
        api, owner, llm, status=RunStatus.RUNNING, started_at=timezone.now()
    )

    extract_topic_task.apply(args=[topic_id, False], task_id=running.task_id, retries=1)

    run = run_of(api, running.task_id)
    assert (run["status"], run["created"]) == ("done", 1)
    assert run["memory_ids"] == [str(Memory.objects.get(user=owner).id)]


def test_a_run_left_running_past_the_claim_time_is_taken_over_by_a_redelivery(
    api, owner, llm, settings
):
    long_ago = timezone.now() - timedelta(seconds=settings.EXTRACTION_CLAIM_SECONDS + 1)
    topic_id, stale = topic_with_a_run(
        api, owner, llm, status=RunStatus.RUNNING, started_at=long_ago
    )

    extract_topic_task.apply(args=[topic_id, False], task_id=stale.task_id)

    run = run_of(api, stale.task_id)
    assert (run["status"], run["created"]) == ("done", 1)
    assert datetime.fromisoformat(run["started_at"]) > long_ago


def test_a_task_sent_without_a_queued_run_gets_one_made_by_the_worker(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
    task_id = str(uuid.uuid4())

    extract_topic_task.apply(args=[topic_id, False], task_id=task_id)

    run = run_of(api, task_id)
    assert (run["status"], run["created"]) == ("done", 1)
    assert run["source"] == {"kind": "topic", "id": topic_id}


def test_a_task_that_raises_leaves_its_run_failed_with_the_error(api, owner, llm, monkeypatch):
    topic_id, queued = topic_with_a_run(api, owner, llm)

    def broken(*args, **kwargs):
        raise RuntimeError("the extraction broke")

    monkeypatch.setattr(services, "_extract_run", broken)

    with pytest.raises(RuntimeError):
        extract_topic_task.apply(args=[topic_id, False], task_id=queued.task_id)

    run = run_of(api, queued.task_id)
    assert run["status"] == "failed"
    assert "RuntimeError: the extraction broke" in run["error"]
    assert run["finished_at"]


def test_a_task_whose_conversation_was_deleted_ends_its_run_skipped_quietly(
    api, owner, llm, caplog
):
    topic_id, queued = topic_with_a_run(api, owner, llm)
    Topic.objects.filter(id=topic_id).delete()

    assert extract_topic_task.apply(args=[topic_id, False], task_id=queued.task_id).get() is None

    run = run_of(api, queued.task_id)
    assert run["status"] == "skipped" and run["finished_at"]
    assert "no longer exists" in run["reason"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert llm.chat_requests() == []


def test_a_task_whose_user_was_erased_meanwhile_ends_quietly(api, owner, llm, caplog):
    """The erasure takes the conversation and the run with it: nothing is left to mark, and
    nothing went wrong (no traceback, no warning)."""
    topic_id, queued = topic_with_a_run(api, owner, llm)
    user_erase(user=owner)
    assert not ExtractionRun.objects.filter(task_id=queued.task_id).exists()

    assert extract_topic_task.apply(args=[topic_id, False], task_id=queued.task_id).get() is None

    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("no longer exists" in r.getMessage() for r in caplog.records)
    assert llm.chat_requests() == []


def test_a_direct_service_call_makes_a_run_of_its_own_addressed_by_its_id(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    made = services.extract_topic(topic_id=topic_id)

    assert made.task_id == str(made.id)
    run = run_of(api, made.task_id)
    assert (run["status"], run["created"]) == ("done", 1)
