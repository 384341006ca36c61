"""Extraction through the real Redis broker and a real Celery worker (a subprocess of this
test, on a queue of its own). The tests commit their rows (transaction=True) so the worker,
another process, sees them in the test database.

Nothing here is skipped: without Redis on 127.0.0.1:6379 these tests fail."""

import time
import uuid
from contextlib import contextmanager

import pytest
from celery import Celery

from extraction.models import RunStatus
from extraction.tasks import extract_topic_task
from extraction.triggers import scan_extractions
from memories.models import Memory, Source, Status
from tests.celery_support import Worker, running_worker, wait_for
from tests.celery_support import broker_app as celery_broker_app
from tests.conftest import client_for, make_user
from tests.extraction.helpers import (
    accepted,
    answer,
    extract,
    memory,
    new_topic,
    post,
    runs_of,
)
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def module_fake_openai():
    """One fake provider for the worker's whole life; each test empties it (see `provider`)."""
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def queue_name() -> str:
    return f"extraction-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def broker_app(queue_name):
    with celery_broker_app("extraction-tests", queue_name) as app:
        yield app


@pytest.fixture(scope="module")
def worker_process(django_db_setup, tmp_path_factory, broker_app, queue_name, module_fake_openai):
    log_path = tmp_path_factory.mktemp("celery") / "worker.log"
    with running_worker(
        broker_app,
        print_log=False,
        queue=queue_name,
        log_path=log_path,
        llm_base_url=module_fake_openai.base_url,
    ) as worker:
        yield worker


@pytest.fixture
def worker(worker_process):
    """The running worker; its log of this test is printed, so a failure shows it."""
    start = worker_process.log_size()
    worker_process.assert_alive()
    yield worker_process
    print(f"--- Celery worker log ---\n{worker_process.log(start)}")


@pytest.fixture
def provider(module_fake_openai):
    module_fake_openai.requests.clear()
    module_fake_openai.chat_answers.clear()
    return module_fake_openai


@pytest.fixture
def hooks_off(settings):
    """Messages are set-up here: posting them must not queue anything on its own."""
    settings.MESSAGE_POSTED_HOOKS = []


def finished_run(api, task_id: str) -> dict | None:
    """The run as GET /api/extraction-runs/{task_id} shows it, once it has finished."""
    response = api.get(f"/api/extraction-runs/{task_id}")
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    return body if body["status"] in ("done", "skipped", "failed") else None


@contextmanager
def consumer_paused(worker: Worker, app: Celery):
    """The worker stops taking messages from our queue (a remote-control command through the
    broker), so what is queued meanwhile stays queued; it takes them again on leaving."""
    replies = app.control.cancel_consumer(
        worker.queue, destination=[worker.hostname], reply=True, timeout=5
    )
    assert replies, f"the worker did not confirm cancel_consumer:\n{worker.log()}"
    try:
        yield
    finally:
        replies = app.control.add_consumer(
            worker.queue, destination=[worker.hostname], reply=True, timeout=5
        )
        assert replies, f"the worker did not confirm add_consumer:\n{worker.log()}"


def busy_topic(user, count: int = 6) -> str:
    api = client_for(user)
    topic_id = new_topic(api)
    for n in range(count):
        post(api, topic_id, f"I live in Lisbon and keep bees, message {n}.")
        post(api, topic_id, f"Noted, {n}.", role="assistant")
    return topic_id


TWO_FACTS = answer(memory("city", "Lives in Lisbon"), memory("hobby", "Keeps bees"))


def test_the_worker_says_once_which_extractor_runs(worker, provider):
    # Sent as the worker is ready, which may come a moment after it answers pings.
    said = wait_for(
        lambda: [line for line in worker.log().splitlines() if "extraction: the " in line],
        worker=worker,
        what="the worker's line about the extractor",
        timeout=15,
    )

    assert len(said) == 1
    assert f"extraction: the LLM fake-model at {provider.base_url}" in said[0]


def test_a_scan_queues_extraction_and_the_worker_completes_it(worker, provider, hooks_off):
    owner = make_user("owner")
    topic_id = busy_topic(owner)
    quiet_topic = busy_topic(owner, count=1)
    provider.chat_answers.append(TWO_FACTS)

    queued = scan_extractions()

    assert queued == {"topics": 1, "work_sessions": 0}
    runs = wait_for(
        lambda: [r for r in runs_of(topic_id) if r.finished_at is not None],
        worker=worker,
        what="the worker's extraction run",
    )
    assert [run.status for run in runs] == [RunStatus.DONE], [(r.status, r.reason) for r in runs]
    assert f"extract_topic_task[{runs[0].task_id}] received" in worker.log()
    saved = {m.value: m for m in Memory.objects.filter(user=owner)}
    assert set(saved) == {"Lives in Lisbon", "Keeps bees"}
    assert {m.status for m in saved.values()} == {Status.PENDING_REVIEW}
    assert {m.source for m in saved.values()} == {Source.CONVERSATION}
    assert len(provider.chat_requests()) == 1
    assert runs_of(quiet_topic) == []


def test_the_same_task_delivered_twice_at_once_runs_once_and_writes_each_memory_once(
    worker, provider, hooks_off
):
    owner = make_user("owner")
    topic_id = busy_topic(owner)
    provider.chat_answers.extend([TWO_FACTS, TWO_FACTS])
    task_id = str(uuid.uuid4())

    extract_topic_task.apply_async(args=[topic_id, False], task_id=task_id)
    extract_topic_task.apply_async(args=[topic_id, False], task_id=task_id)

    wait_for(
        lambda: worker.log().count(f"extract_topic_task[{task_id}] succeeded") == 2,
        worker=worker,
        what="both deliveries",
    )
    assert worker.log().count(f"extract_topic_task[{task_id}] received") == 2
    [run] = runs_of(topic_id)
    assert (run.task_id, run.status, run.created) == (task_id, RunStatus.DONE, 2), run.reason
    values = sorted(Memory.objects.filter(user=owner).values_list("value", flat=True))
    assert values == ["Keeps bees", "Lives in Lisbon"]
    assert len(provider.chat_requests()) == 1


def test_a_task_delivered_again_after_its_run_finished_leaves_the_run_as_it_was(
    worker, provider, hooks_off
):
    owner = make_user("owner")
    api = client_for(owner)
    topic_id = busy_topic(owner)
    provider.chat_answers.extend([TWO_FACTS, TWO_FACTS])
    response = extract(api, topic_id)
    assert response.status_code == 202, response.content[:500]
    task_id = response.json()["task_id"]
    first = wait_for(lambda: finished_run(api, task_id), worker=worker, what="the first delivery")
    post(api, topic_id, "Something new to read, so a second run would have work to do.")

    extract_topic_task.apply_async(args=[topic_id, False], task_id=task_id)

    wait_for(
        lambda: worker.log().count(f"extract_topic_task[{task_id}] succeeded") == 2,
        worker=worker,
        what="the second delivery",
    )
    assert api.get(f"/api/extraction-runs/{task_id}").json() == first
    assert first["status"] == "done" and len(first["memory_ids"]) == 2
    assert len(provider.chat_requests()) == 1
    assert Memory.objects.filter(user=owner).count() == 2


def test_an_extraction_answers_a_run_that_reads_queued_at_once_and_is_followed_to_done(
    worker, provider, hooks_off, broker_app
):
    owner = make_user("owner")
    api = client_for(owner)
    topic_id = busy_topic(owner)
    provider.chat_answers.append(TWO_FACTS)

    with consumer_paused(worker, broker_app):
        task_id = accepted(extract(api, topic_id), "queued")["task_id"]
        queued = api.get(f"/api/extraction-runs/{task_id}")

    assert queued.status_code == 200, queued.content[:500]
    assert queued.json() | {"created_at": None} == {
        "task_id": task_id,
        "status": "queued",
        "source": {"kind": "topic", "id": topic_id},
        "created": 0,
        "merged": 0,
        "skipped": 0,
        "memory_ids": [],
        "error": None,
        "reason": None,
        "started_at": None,
        "finished_at": None,
        "created_at": None,
    }
    done = wait_for(lambda: finished_run(api, task_id), worker=worker, what="the run to finish")
    assert (done["status"], done["created"], done["merged"]) == ("done", 2, 0), done
    assert done["started_at"] and done["finished_at"]
    assert f"extract_topic_task[{task_id}] received" in worker.log()
    pending = api.get("/api/memories", {"status": "pending_review"}).json()["data"]
    assert sorted(done["memory_ids"]) == sorted(m["id"] for m in pending)
    assert {m["value"] for m in pending} == {"Lives in Lisbon", "Keeps bees"}


def test_a_batch_of_messages_starts_one_extraction_the_worker_completes(
    worker, provider, broker_app, settings
):
    settings.EXTRACTION_USER_MESSAGES = 6
    owner = make_user("owner")
    api = client_for(owner)
    topic_id = new_topic(api)
    batch = []
    for n in range(20):
        batch.append({"role": "user", "content": f"I live in Lisbon and keep bees, part {n}."})
        batch.append({"role": "assistant", "content": f"Noted, {n}."})
    provider.chat_answers.append(TWO_FACTS)

    with consumer_paused(worker, broker_app):
        response = api.post(f"/api/topics/{topic_id}/messages", {"messages": batch}, format="json")
        assert response.status_code == 201, response.content[:500]
        extraction = response.json()["extraction"]
        assert extraction["status"] == "queued", extraction
        assert api.get(f"/api/extraction-runs/{extraction['task_id']}").json()["status"] == "queued"

    done = wait_for(
        lambda: finished_run(api, extraction["task_id"]), worker=worker, what="the run to finish"
    )
    assert (done["status"], done["created"]) == ("done", 2), done
    [run] = runs_of(topic_id)
    ids = [m["id"] for m in response.json()["data"]]
    assert (run.from_message_id, run.to_message_id) == (ids[0], ids[-1])
    assert len(provider.chat_requests()) == 1


def test_posting_the_threshold_message_queues_extraction_for_the_worker(worker, provider, settings):
    settings.EXTRACTION_USER_MESSAGES = 6
    owner = make_user("owner")
    api = client_for(owner)
    topic_id = new_topic(api)
    provider.chat_answers.append(TWO_FACTS)
    for n in range(5):
        post(api, topic_id, f"I live in Lisbon and keep bees, message {n}.")
    time.sleep(0.5)
    assert runs_of(topic_id) == []

    post(api, topic_id, "That is all for today.")

    wait_for(
        lambda: Memory.objects.filter(user=owner).count() == 2,
        worker=worker,
        what="the memories of the automatic extraction",
    )
    [run] = runs_of(topic_id)
    assert run.status == RunStatus.DONE
    assert f"extract_topic_task[{run.task_id}] received" in worker.log()
    assert set(Memory.objects.values_list("source", flat=True)) == {Source.CONVERSATION}
