"""A slow receiver holds nobody's work (issue 42, item 3), on the embedded default: deliveries
run on threads of their own (the webhook queue's embedded worker), apart from the thread that
runs extraction; an attempt ends after WEBHOOK_TIMEOUT_SECONDS in all however the receiver
trickles its answer; one endpoint has one attempt under way at a time, so a trickling
receiver holds one delivery thread, not all; and the claim outlives the attempt, so nothing is
sent again while it is in flight. The same on the production set's Celery workers:
tests/webhooks/test_celery_worker.py.

Committed for real (transaction=True): the workers' threads read the database on connections
of their own."""

import threading
import time
from datetime import timedelta

import pytest

from config import embedded_worker
from config.embedded_worker import EmbeddedWorker
from tests.extraction.helpers import answer, memory
from tests.webhooks.isolation import another_tenants_work_goes_on
from webhooks.delivery import deliveries_due_send, delivery_attempt
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("no_embedder")]
WAIT_SECONDS = 30
DELIVERY_THREADS = 2


@pytest.fixture
def workers(transactional_db, monkeypatch, settings):
    """This process's embedded workers as config/embedded.py starts them: the default queue's
    one thread, and the webhook queue's threads; stopped (their queues run to the end) before
    the database is emptied."""
    default = EmbeddedWorker()
    deliveries = EmbeddedWorker("embedded-webhooks", DELIVERY_THREADS)
    default.start()
    deliveries.start()
    monkeypatch.setattr(embedded_worker, "_worker", default)
    monkeypatch.setattr(embedded_worker, "_queue_workers", {settings.WEBHOOK_QUEUE: deliveries})
    yield default, deliveries
    deliveries.stop(timeout=WAIT_SECONDS)
    default.stop(timeout=WAIT_SECONDS)


def wait_until(condition, what: str, timeout: float = WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_the_api_answers_while_the_receiver_holds_the_delivery(
    endpoint, receiver, alice, workers, settings
):
    receiver.hold = threading.Event()
    response = alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")
    assert response.status_code == 201  # answered; the receiver has not answered yet
    assert receiver.arrived.wait(WAIT_SECONDS), "the worker never sent the delivery"
    assert receiver.received == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and not delivery.attempts.exists()

    # The worker's attempt holds the delivery: another worker or the sweep leaves it alone.
    assert delivery_attempt(delivery_id=delivery.id) == "not_due"
    assert deliveries_due_send() == 0

    receiver.hold.set()
    wait_until(
        lambda: WebhookDelivery.objects.get().status == "delivered", "the delivery to finish"
    )
    [received] = receiver.wait_for(1)
    assert received.event["data"]["id"] == response.json()["id"]
    assert WebhookDelivery.objects.get().attempts.count() == 1
    # Let go once sent: the endpoint's next delivery goes at once.
    wait_until(lambda: WebhookEndpoint.objects.get().sending_until is None, "the endpoint let go")


def test_an_attempt_ends_after_the_timeout_in_all_however_slowly_the_receiver_answers(
    endpoint, receiver, alice, settings
):
    # A byte every 0.2 s: every read is well within 1 s, yet the answer never ends.
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0
    receiver.trickle_seconds = 0.2

    # No worker runs here: the attempt is made as the request commits.
    response = alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")

    assert response.status_code == 201
    attempt = WebhookAttempt.objects.get()
    assert attempt.outcome == "timeout", attempt.error
    assert "within 1 s in all" in attempt.error
    assert attempt.duration_ms < 2500, attempt.duration_ms
    # The sender closed the connection: the receiver stopped trickling then, not at its end.
    wait_until(lambda: receiver.trickled, "the trickling connection to close")
    assert receiver.trickled[0] < 3.0, receiver.trickled


def test_a_sweep_during_a_trickling_attempt_sends_nothing_again(
    endpoint, receiver, alice, workers, settings
):
    settings.WEBHOOK_TIMEOUT_SECONDS = 2.0
    receiver.trickle_seconds = 0.2
    started = time.time()
    response = alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")
    assert response.status_code == 201
    receiver.wait_trickling(1)

    # The claim, and the hold on the endpoint, outlive the attempt's bound.
    delivery = WebhookDelivery.objects.get()
    bound = timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS)
    assert delivery.next_attempt_at.timestamp() > started + bound.total_seconds()
    assert WebhookEndpoint.objects.get().sending_until >= delivery.next_attempt_at
    for _ in range(5):
        assert deliveries_due_send() == 0
        assert delivery_attempt(delivery_id=delivery.id) == "not_due"
        time.sleep(0.2)

    wait_until(lambda: WebhookAttempt.objects.exists(), "the attempt to end")
    assert [a.outcome for a in WebhookAttempt.objects.all()] == ["timeout"]
    wait_until(lambda: receiver.trickled, "the trickling connection to close")
    assert len(receiver.trickled) == 1 and receiver.trickling == 0  # the one attempt's
    assert WebhookDelivery.objects.get().status == "pending"  # due again: retried later


@pytest.fixture
def model(settings, fake_openai):
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_MODEL = "fake-model"
    settings.LLM_API_KEY = "k"
    settings.EXTRACTION_USER_MESSAGES = 6  # a post of six user messages makes it due
    fake_openai.chat_responder = lambda body: answer(memory("city", "Lives in Lisbon"))
    return fake_openai


def test_another_tenants_extraction_and_delivery_go_on_while_a_receiver_trickles(
    endpoint, receiver, alice, workers, settings, model
):
    # The default tenant's attempts may take 30 s each: longer than the test.
    settings.WEBHOOK_TIMEOUT_SECONDS = 30.0
    another_tenants_work_goes_on(
        alice=alice,
        endpoint=endpoint,
        receiver=receiver,
        wait=lambda condition, what, timeout: wait_until(condition, what, timeout),
    )
