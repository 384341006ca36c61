"""Webhooks through the real Redis broker and real Celery workers (subprocesses of this test),
as the production set runs them: a worker for the default queue (extraction, the periodic
work) and one for the delivery queue (WEBHOOK_QUEUE), each on a queue of this test's own. The
request is answered while the receiver holds the delivery the worker sent; a failed attempt is
retried when the periodic task runs, and the receiver verifies both; deliveries run on the
delivery worker only; a receiver that trickles its answer holds neither another tenant's
delivery nor its extraction. The rows are committed (transaction=True) so the workers see
them.

Nothing here is skipped: without Redis on 127.0.0.1:6379 this test fails."""

import threading
import time
import uuid

import pytest

from tests.celery_support import broker_app as celery_broker_app
from tests.celery_support import running_worker, wait_for
from tests.extraction.helpers import answer, memory
from tests.fake_openai import FakeOpenAI
from tests.webhooks.isolation import another_tenants_work_goes_on
from webhooks.models import WebhookDelivery
from webhooks.tasks import deliver_due_webhooks_task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_embedder")]
# What both workers read: deliveries go to this test's delivery queue, and an attempt may
# take 20 s (a trickling receiver's take the whole test).
WORKER_SETTINGS = {
    "WEBHOOK_ALLOW_PRIVATE": "true",
    "WEBHOOK_RETRY_SECONDS": "0",
    "WEBHOOK_TIMEOUT_SECONDS": "20",
    "EMBEDDER": "none",
}


@pytest.fixture(scope="module")
def queues() -> tuple[str, str]:
    """This module's default queue and delivery queue (one prefix: the broker app's clean-up
    deletes both)."""
    prefix = f"webhooks-test-{uuid.uuid4().hex[:12]}"
    return f"{prefix}-tasks", f"{prefix}-deliveries"


@pytest.fixture(scope="module")
def broker_app(queues):
    """The app the services send with: to the default queue, and webhook tasks routed to the
    delivery queue, as config.settings routes them."""
    tasks_queue, delivery_queue = queues
    with celery_broker_app("webhooks-tests", tasks_queue.removesuffix("-tasks")) as app:
        app.conf.task_default_queue = tasks_queue
        app.conf.task_routes = {"webhooks.tasks.*": {"queue": delivery_queue}}
        yield app


@pytest.fixture(scope="module")
def model():
    server = FakeOpenAI().start()
    server.chat_responder = lambda body: answer(memory("city", "Lives in Lisbon"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def workers(django_db_setup, tmp_path_factory, broker_app, queues, model):
    """The default queue's worker and the delivery queue's worker."""
    tasks_queue, delivery_queue = queues
    logs = tmp_path_factory.mktemp("celery")
    settings = {**WORKER_SETTINGS, "WEBHOOK_QUEUE": delivery_queue}
    with (
        running_worker(
            broker_app,
            queue=tasks_queue,
            log_path=logs / "tasks.log",
            llm_base_url=model.base_url,
            settings=settings,
        ) as tasks_worker,
        running_worker(
            broker_app,
            queue=delivery_queue,
            log_path=logs / "deliveries.log",
            llm_base_url=model.base_url,
            settings=settings,
        ) as delivery_worker,
    ):
        yield tasks_worker, delivery_worker


def wait_until(condition, *, workers, what: str, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        for worker in workers:
            worker.assert_alive()
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_a_worker_delivers_off_the_request_and_retries_when_the_sweep_runs(
    workers, endpoint, receiver, alice
):
    tasks_worker, worker = workers
    receiver.hold = threading.Event()
    receiver.statuses = [500]  # then 200
    response = alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")
    assert response.status_code == 201  # answered while the delivery is not
    assert receiver.arrived.wait(60), f"the worker never sent it:\n{worker.log()}"
    receiver.hold.set()

    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(attempt_count=1).first(),
        worker=worker,
        what="the first attempt",
    )
    assert delivery.status == "pending"
    deliver_due_webhooks_task.apply_async()
    wait_for(
        lambda: WebhookDelivery.objects.filter(status="delivered").exists(),
        worker=worker,
        what="the retry",
    )
    first, second = receiver.wait_for(2)
    assert first.webhook_id == second.webhook_id == delivery.message_id
    assert second.event["data"]["id"] == response.json()["id"]
    assert receiver.invalid == []
    log = worker.log()
    assert f"attempt 1 of {delivery.message_id} failed" in log
    assert f"attempt 2 of {delivery.message_id} delivered" in log
    # Deliveries and the sweep ran on the delivery worker, never beside extraction.
    assert "Task webhooks.tasks.deliver_webhook_task[" in log
    assert "Task webhooks.tasks.deliver_due_webhooks_task[" in log
    assert "Task webhooks.tasks." not in tasks_worker.log()


def test_another_tenants_extraction_and_delivery_go_on_while_a_receiver_trickles(
    workers, endpoint, receiver, alice, settings
):
    settings.EXTRACTION_USER_MESSAGES = 6  # as the workers: six user messages make it due
    # The workers let an attempt take 20 s (WORKER_SETTINGS): longer than the test.
    another_tenants_work_goes_on(
        alice=alice,
        endpoint=endpoint,
        receiver=receiver,
        wait=lambda condition, what, timeout: wait_until(
            condition, workers=workers, what=what, timeout=timeout
        ),
    )
