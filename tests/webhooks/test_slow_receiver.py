"""A slow receiver never slows an API request: with the embedded worker (the default serving
set-up, no broker) the delivery is sent on the worker's thread after the request has been
answered. Shown without timings: the receiver holds the delivery until the test lets it go,
and the API's answer arrives while it is held. Committed for real (transaction=True): the
worker's thread reads the database on a connection of its own."""

import threading
import time

import pytest

from config import embedded_worker
from config.embedded_worker import EmbeddedWorker
from webhooks.delivery import deliveries_due_attempt, delivery_attempt
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_embedder")]
WAIT_SECONDS = 30


@pytest.fixture
def worker(transactional_db, monkeypatch):
    worker = EmbeddedWorker()
    worker.start()
    monkeypatch.setattr(embedded_worker, "_worker", worker)
    yield worker
    worker.stop(timeout=WAIT_SECONDS)


def wait_until(condition, what: str):
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_api_answers_while_the_receiver_holds_the_delivery(endpoint, receiver, alice, worker):
    receiver.hold = threading.Event()
    response = alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")
    assert response.status_code == 201  # answered; the receiver has not answered yet
    assert receiver.arrived.wait(WAIT_SECONDS), "the worker never sent the delivery"
    assert receiver.received == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and not delivery.attempts.exists()

    # The worker's attempt holds the delivery: another worker or the sweep leaves it alone.
    assert delivery_attempt(delivery_id=delivery.id) == "not_due"
    assert deliveries_due_attempt() == 0

    receiver.hold.set()
    wait_until(
        lambda: WebhookDelivery.objects.get().status == "delivered", "the delivery to finish"
    )
    [received] = receiver.wait_for(1)
    assert received.event["data"]["id"] == response.json()["id"]
    assert WebhookDelivery.objects.get().attempts.count() == 1
