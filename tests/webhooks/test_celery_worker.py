"""Webhooks through the real Redis broker and a real Celery worker (a subprocess of this test,
on a queue of its own): the request is answered while the receiver holds the delivery the
worker sent, a failed attempt is retried when the periodic task runs, and the receiver
verifies both. The rows are committed (transaction=True) so the worker sees them.

Nothing here is skipped: without Redis on 127.0.0.1:6379 this test fails."""

import threading
import uuid

import pytest

from tests.celery_support import broker_app as celery_broker_app
from tests.celery_support import running_worker, wait_for
from webhooks.models import WebhookDelivery
from webhooks.tasks import deliver_due_webhooks_task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_embedder")]


@pytest.fixture(scope="module")
def queue_name() -> str:
    return f"webhooks-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def broker_app(queue_name):
    with celery_broker_app("webhooks-tests", queue_name) as app:
        yield app


@pytest.fixture(scope="module")
def worker(django_db_setup, tmp_path_factory, broker_app, queue_name):
    log_path = tmp_path_factory.mktemp("celery") / "worker.log"
    with running_worker(
        broker_app,
        queue=queue_name,
        log_path=log_path,
        llm_base_url="http://127.0.0.1:9/v1",
        settings={
            "WEBHOOK_ALLOW_PRIVATE": "true",
            "WEBHOOK_RETRY_SECONDS": "0",
            "WEBHOOK_TIMEOUT_SECONDS": "20",
            "EMBEDDER": "none",
        },
    ) as process:
        yield process


def test_a_worker_delivers_off_the_request_and_retries_when_the_sweep_runs(
    worker, endpoint, receiver, alice
):
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
