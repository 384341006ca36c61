"""Structured logs: JSON lines carrying the request id (the caller's X-Request-Id when sane),
the user, the route and the time of each request; the id travels into the Celery tasks the
request starts; memory and message text stays out at INFO, the model's answer shows at DEBUG."""

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from celery import Celery
from celery import _state as celery_state
from celery.contrib.testing.worker import start_worker

from config.celery import app
from ops import context
from tests.extraction.helpers import accepted, answer, extract, memory, new_topic, post

REPO = Path(__file__).resolve().parents[2]


def request_lines(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line["logger"] == "ops.requests"]


def test_each_request_logs_one_json_line_with_its_id_user_route_and_time(
    api, owner, log_lines, no_embedder
):
    response = api.get("/api/memories", HTTP_X_REQUEST_ID="req-7f3a.1:b_c")

    assert response["X-Request-Id"] == "req-7f3a.1:b_c"
    [line] = request_lines(log_lines())
    assert line["request_id"] == "req-7f3a.1:b_c"
    assert line["user_id"] == str(owner.id)
    assert line["route"] == "/api/memories"
    assert line["method"] == "GET" and line["path"] == "/api/memories"
    assert line["status"] == 200
    assert line["duration_ms"] >= 0
    assert line["level"] == "INFO" and line["time"]


def test_a_request_without_a_sane_id_gets_a_new_one(anon_api, db, log_lines):
    first = anon_api.get("/api/memories")
    hostile = anon_api.get("/api/memories", HTTP_X_REQUEST_ID='x" injected\tline' + "a" * 200)

    for response in (first, hostile):
        assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-Id"]), response["X-Request-Id"]
    assert first["X-Request-Id"] != hostile["X-Request-Id"]
    ids = [line["request_id"] for line in request_lines(log_lines())]
    assert ids == [first["X-Request-Id"], hostile["X-Request-Id"]]
    assert "injected" not in log_lines.text()


def test_every_line_a_request_writes_carries_its_id(anon_api, db, log_lines):
    response = anon_api.get("/api/memories", HTTP_X_REQUEST_ID="req-401")

    assert response.status_code == 401
    lines = log_lines()
    # Ours and Django's own line about the 401, logged after the middleware returned.
    assert {line["logger"] for line in lines} >= {"ops.requests", "django.request"}
    assert all(line["request_id"] == "req-401" for line in lines), lines


def test_the_request_id_reaches_the_extraction_task_the_request_starts(api, llm, log_lines):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    body = accepted(
        api.post(f"/api/memories/extract/{topic_id}", HTTP_X_REQUEST_ID="req-42"), "done"
    )

    task_lines = [line for line in log_lines() if line.get("task_id") == body["task_id"]]
    assert task_lines, log_lines()
    for line in task_lines:
        assert line["request_id"] == "req-42"
        assert line["task"] == "extraction.tasks.extract_topic_task"
    # Outside the task again: the request's own line has no task.
    [request_line] = [
        line for line in request_lines(log_lines()) if line["path"].startswith("/api/memories/ex")
    ]
    assert request_line["request_id"] == "req-42" and "task_id" not in request_line


def test_the_request_id_travels_in_the_message_to_a_worker():
    """Through a real broker round trip (kombu's in-memory transport) and an embedded worker
    thread: the id goes out as a message header and is bound again around the task."""
    app = Celery("ops-tests", broker="memory://", set_as_current=False)
    app.conf.update(
        task_always_eager=False,
        broker_transport_options={"polling_interval": 0.05},
        task_ignore_result=True,
    )
    seen: dict = {}
    ran = threading.Event()

    @app.task(name="ops_tests.record_log_fields")
    def record_log_fields():
        seen.update(context.fields())
        ran.set()

    previous_current, previous_default = celery_state.get_current_app(), celery_state.default_app
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
            context.start_request(None, "req-worker-9")
            try:
                result = record_log_fields.delay()
            finally:
                context.end_request()
            assert ran.wait(20), "the embedded worker did not run the task"
    finally:
        previous_current.set_current()
        celery_state.set_default_app(previous_default)
        app.close()

    assert seen == {
        "request_id": "req-worker-9",
        "task_id": result.id,
        "task": "ops_tests.record_log_fields",
    }


def test_memory_and_message_text_stay_out_of_the_logs_at_info(api, llm, log_lines):
    topic_id = new_topic(api)
    post(api, topic_id, "My secret sailing club is Zanzibar Reef.")
    llm.chat_answers.append(answer(memory("club", "Sails with Zanzibar Reef")))
    accepted(extract(api, topic_id), "done")
    api.post("/api/memories", {"key": "pet", "value": "A parrot named Quillfeather"}, format="json")
    api.get("/api/memories/search", {"q": "Quillfeather parrot"})

    text = log_lines.text()
    assert log_lines(), "nothing was logged"
    assert "Zanzibar" not in text and "Quillfeather" not in text


def test_the_model_answer_is_logged_at_debug_only(api, llm, log_lines):
    model_logger = logging.getLogger("extraction.llm")
    previous = model_logger.level
    model_logger.setLevel(logging.DEBUG)
    try:
        topic_id = new_topic(api)
        post(api, topic_id, "I moved to Lisbon last month.")
        llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
        accepted(extract(api, topic_id), "done")
    finally:
        model_logger.setLevel(previous)

    [line] = [line for line in log_lines() if "Lives in Lisbon" in line["message"]]
    assert line["level"] == "DEBUG" and line["logger"] == "extraction.llm"
    assert line["request_id"]


@pytest.mark.parametrize(
    ("variables", "format_"),
    [({}, "json"), ({"DEBUG": "true"}, "console"), ({"LOG_FORMAT": "console"}, "console")],
)
def test_log_format_is_json_in_production_and_text_with_debug(variables, format_):
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "LOG_FORMAT")
    }
    environment.update({"SECRET_KEY": "test-only-secret-key", "EMBEDDER": "none", **variables})
    code = "import logging; logging.getLogger('probe').warning('hello %s', 'there')"

    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "hello there" in line]
    if format_ == "json":
        assert json.loads(line) | {"time": None} == {
            "level": "WARNING",
            "logger": "probe",
            "message": "hello there",
            "time": None,
        }
    else:
        assert line.endswith("WARNING probe [-] hello there"), line


def test_a_malformed_log_format_stops_start_up():
    environment = {
        **{key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"},
        "SECRET_KEY": "x",
        "LOG_FORMAT": "xml",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert "LOG_FORMAT='xml': expected one of json, console" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_the_webhook_sweep_logs_nothing_when_nothing_is_due_and_its_count_when_something_is(
    log_lines, settings, tmp_path
):
    """The embedded scheduler sends the webhook sweep every few seconds: with nothing to send,
    neither the scheduler nor Celery's "succeeded" line says so on the embedded worker
    (issue 42); a sweep that sent something, and an ordinary task, are still logged."""
    from config.embedded_scheduler import EmbeddedScheduler
    from config.embedded_worker import EmbeddedWorker, Job
    from memories.tasks import finish_erasures_task
    from webhooks.models import WebhookDelivery, WebhookEndpoint
    from webhooks.tasks import deliver_due_webhooks_task

    worker = EmbeddedWorker()
    worker.start()
    results = []

    def submit(name, args, kwargs, on_done):
        task = app.tasks[name]
        # The embedded scheduler's submit (config/embedded.py), its result kept here.
        worker.submit(
            Job(task, args, kwargs, name, lambda: (results.append(name), on_done()), periodic=True)
        )

    now = [10_000.0]
    scheduler = EmbeddedScheduler(
        {"deliver-webhooks": settings.CELERY_BEAT_SCHEDULE["deliver-webhooks"]},
        submit=submit,
        lock_path=tmp_path / "lock",
        clock=lambda: now[0],
    )

    def sweep() -> None:
        now[0] += 3600  # due
        scheduler.tick()
        count = len(results)
        deadline = time.monotonic() + 30
        while len(results) == count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(results) == count + 1, "the sweep never ran"

    try:
        sweep()
        assert log_lines() == []

        # Something to send: the sweep's line says how many (the delivery itself is refused:
        # the target is a private address and WEBHOOK_ALLOW_PRIVATE is off).
        from memories.accounts.tenants import default_tenant

        endpoint = WebhookEndpoint.objects.create(
            tenant=default_tenant(), url="http://127.0.0.1:9/hooks", events=[], secret="whsec_MA=="
        )
        WebhookDelivery.objects.create(
            endpoint=endpoint, event_type="memory.created", body="{}", next_attempt_at=None
        )
        WebhookDelivery.objects.update(next_attempt_at=endpoint.created_at)
        sweep()
        lines = [line["message"] for line in log_lines() if line["logger"] == "celery.app.trace"]
        assert any("deliver_due_webhooks_task" in line and ": 1" in line for line in lines)
        # The delivery's own task is logged whatever it returns.
        assert any("deliver_webhook_task" in line and "refused" in line for line in lines)
    finally:
        worker.stop(timeout=30)
    # Outside the embedded scheduler (a Celery worker logs what it receives too), a periodic
    # task is logged whatever it returns.
    assert deliver_due_webhooks_task.apply().get() == 0
    assert finish_erasures_task.apply().get() == 0
    lines = [line["message"] for line in log_lines()]
    assert any("deliver_due_webhooks_task" in line and ": 0" in line for line in lines)
    assert any("finish_erasures_task" in line for line in lines), lines
