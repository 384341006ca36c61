"""The embedded worker and scheduler (config/embedded_worker.py, config/embedded_scheduler.py):
without a broker, a serving process runs the tasks it sends on a thread of its own, so a
request never waits on the model, and one process per lock file runs the beat schedule.

The worker is started by config/wsgi.py only; here each test starts one of its own, and the
rest of the suite keeps running tasks inline. Committed for real (transaction=True): the
worker's thread reads the database on a connection of its own."""

import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from celery.schedules import crontab

from config import embedded, embedded_worker
from config.celery import app
from config.embedded_scheduler import EmbeddedScheduler
from config.embedded_worker import EmbeddedWorker, Job
from extraction.models import RunStatus
from memories.models import Memory, Status
from tests.extraction.helpers import answer, conversation, memory, new_topic

WAIT_SECONDS = 60


@pytest.fixture
def worker(transactional_db, monkeypatch):
    """This process's embedded worker, as config/wsgi.py starts it; stopped (its queue run
    to the end) before the database is emptied."""
    worker = EmbeddedWorker()
    worker.start()
    monkeypatch.setattr(embedded_worker, "_worker", worker)
    yield worker
    worker.stop(timeout=WAIT_SECONDS)


@pytest.fixture
def llm(settings, fake_openai):
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_MODEL = "fake-model"
    settings.LLM_API_KEY = "k"
    settings.EXTRACTION_USER_MESSAGES = 6  # a post of six user messages makes it due
    return fake_openai


@pytest.fixture
def held_model(llm):
    """The model's stand-in answers one memory, each answer held until the test lets it go."""
    release = threading.Event()
    asked = threading.Event()

    def respond(body: dict) -> dict:
        asked.set()
        assert release.wait(WAIT_SECONDS), "the test never let the model answer"
        return answer(memory("city", "Lives in Lisbon"))

    llm.chat_responder = respond
    yield asked, release
    release.set()


def test_a_post_that_starts_an_extraction_answers_before_the_model_has(
    worker, api, owner, held_model
):
    asked, release = held_model
    topic_id = new_topic(api)

    response = api.post(
        f"/api/topics/{topic_id}/messages", {"messages": conversation(6)}, format="json"
    )

    # The model has not answered (it cannot before `release`), yet the post has.
    assert not release.is_set()
    assert response.status_code == 201, response.content[:500]
    extraction = response.json()["extraction"]
    assert extraction["status"] in (RunStatus.QUEUED, RunStatus.RUNNING)
    assert asked.wait(WAIT_SECONDS), "the worker never called the model"
    release.set()
    worker.stop(timeout=WAIT_SECONDS)  # runs what is queued to the end
    run = api.get(f"/api/extraction-runs/{extraction['task_id']}").json()
    assert run["status"] == RunStatus.DONE
    assert Memory.objects.get(user=owner, key="city").status == Status.PENDING_REVIEW


# A task of this test module's own: where it ran, held until the test lets it end.
ran_on: list[str] = []
let_end = threading.Event()
ended = threading.Event()


@app.task(name="tests.config.test_embedded_worker.held_task")
def held_task() -> None:
    ran_on.append(threading.current_thread().name)
    assert let_end.wait(WAIT_SECONDS)
    ended.set()


def test_a_task_sent_while_the_worker_runs_runs_on_its_thread_after_the_sender_returns(worker):
    ran_on.clear()
    let_end.clear()
    ended.clear()

    result = held_task.delay()

    # The sender has its answer while the task cannot have ended (it waits for let_end).
    assert not ended.is_set()
    assert result.id
    let_end.set()
    assert ended.wait(WAIT_SECONDS)
    assert ran_on == ["embedded-worker"]


def test_a_task_that_raises_is_logged_and_the_worker_goes_on(worker, caplog):
    from memories.tasks import finish_erasures_task

    ran = threading.Event()
    worker.submit(Job(finish_erasures_task, ("unexpected argument",), {}, "bad-call"))
    worker.submit(Job(finish_erasures_task, (), {}, "next", on_done=ran.set))

    assert ran.wait(WAIT_SECONDS)
    [failure] = [r for r in caplog.records if "raised" in r.getMessage()]
    assert "bad-call" in failure.getMessage() and failure.exc_info is not None


def test_without_a_started_worker_tasks_run_inline_as_before(db):
    from memories.tasks import finish_erasures_task

    assert embedded_worker.embedded_worker() is None
    assert finish_erasures_task.delay().get() == 0


def test_with_a_broker_nothing_embedded_starts(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/7"

    assert embedded.embedded_start() is False
    assert embedded_worker.embedded_worker() is None


# --- the scheduler ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scheduler_of(schedule: dict, tmp_path, clock=None) -> tuple[EmbeddedScheduler, list]:
    sent: list = []

    def submit(task: str, args: tuple, kwargs: dict, on_done) -> None:
        sent.append((task, args, kwargs, on_done))

    scheduler = EmbeddedScheduler(
        schedule,
        submit=submit,
        lock_path=tmp_path / "var" / "scheduler.lock",
        clock=clock or Clock(),
    )
    return scheduler, sent


def test_the_scheduler_queues_each_entry_at_its_interval_and_one_run_at_a_time(tmp_path):
    clock = Clock()
    scheduler, sent = scheduler_of(
        {
            "scan": {"task": "tasks.scan", "schedule": 10},
            "consolidate": {"task": "tasks.consolidate", "schedule": timedelta(seconds=30)},
            "erase": {"task": "tasks.erase", "schedule": 5.0, "args": ("x",), "kwargs": {"n": 1}},
        },
        tmp_path,
        clock,
    )
    assert scheduler.lock_take()

    # As Celery beat: nothing at the start, each entry one interval later.
    assert scheduler.tick() == 5.0
    assert sent == []
    clock.now += 5
    assert scheduler.tick() == 5.0
    assert [(task, args, kwargs) for task, args, kwargs, _ in sent] == [
        ("tasks.erase", ("x",), {"n": 1})
    ]
    sent[0][3]()  # the worker finished it
    clock.now += 5
    scheduler.tick()
    assert [task for task, *_ in sent] == ["tasks.erase", "tasks.scan", "tasks.erase"]
    # The scan's run is still queued or running ten seconds on: not queued a second time.
    sent[2][3]()
    clock.now += 10
    scheduler.tick()
    assert [task for task, *_ in sent[3:]] == ["tasks.erase"]
    sent[1][3]()
    clock.now += 10
    scheduler.tick()
    assert sorted(task for task, *_ in sent[4:]) == ["tasks.consolidate", "tasks.scan"]


def test_an_entry_that_is_not_an_interval_is_left_to_celery_beat(tmp_path, caplog):
    scheduler, _ = scheduler_of(
        {"nightly": {"task": "tasks.nightly", "schedule": crontab(hour=3, minute=0)}}, tmp_path
    )

    assert scheduler.entries == []
    assert "nightly is not a fixed interval" in caplog.text


def test_only_one_scheduler_holds_a_lock_file(tmp_path):
    first, _ = scheduler_of({}, tmp_path)
    second, _ = scheduler_of({}, tmp_path)

    assert first.lock_take()
    assert not second.lock_take()
    first.stop()
    assert second.lock_take()
    second.stop()


def test_a_scheduler_in_another_process_holds_the_lock_until_it_ends(tmp_path):
    lock_path = tmp_path / "var" / "scheduler.lock"
    lock_path.parent.mkdir()
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys; f = open(sys.argv[1], 'a'); "
            "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('held', flush=True); "
            "sys.stdin.read()",
            str(lock_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout.readline().strip() == "held"
        scheduler, _ = scheduler_of({}, tmp_path)
        assert not scheduler.lock_take()
    finally:
        other.stdin.close()
        other.wait(timeout=WAIT_SECONDS)

    assert scheduler.lock_take()
    scheduler.stop()


def test_the_lock_file_is_one_per_checkout_and_database(tmp_path):
    database = {"ENGINE": "django.db.backends.postgresql", "NAME": "memory", "HOST": "db"}

    path = embedded.scheduler_lock_path(tmp_path, database)

    assert path.parent == tmp_path / "var" / "embedded-scheduler"
    assert path == embedded.scheduler_lock_path(tmp_path, dict(database))
    assert path != embedded.scheduler_lock_path(tmp_path, {**database, "NAME": "another"})
