"""The slow-receiver scenario both deployments run (tests/webhooks/test_slow_receiver.py on
the embedded worker's threads, tests/webhooks/test_celery_worker.py on Celery workers):
while the default tenant's receiver trickles its answer, another tenant's delivery arrives
and its extraction ends."""

import time
from collections.abc import Callable

from extraction.models import ExtractionRun, RunStatus
from memories.models import Tenant
from tests.conftest import key_client, new_key
from tests.extraction.helpers import conversation, new_topic
from tests.webhooks.conftest import register
from tests.webhooks.receiver import Receiver
from webhooks.models import WebhookAttempt, WebhookDelivery

# How long the other tenant's delivery and extraction may take (about a second here).
WITHIN_SECONDS = 15.0
SLOW_DELIVERIES = 3

# wait(condition, what, timeout): until condition() is true, else fail saying `what`.
Wait = Callable[[Callable[[], object], str, float], object]


def another_tenants_work_goes_on(*, alice, endpoint: dict, receiver: Receiver, wait: Wait):
    """`receiver` (the default tenant's, registered as `endpoint`) answers a byte every half
    second, for longer than the test (the attempt's bound must be longer still): alice saves
    SLOW_DELIVERIES memories, one attempt at them trickles; then globex's end user saves a
    memory and posts a conversation that is due for extraction."""
    receiver.trickle_seconds = 0.5
    for number in range(SLOW_DELIVERIES):
        saved = alice.post("/api/memories", {"key": f"k{number}", "value": "v"}, format="json")
        assert saved.status_code == 201
    receiver.wait_trickling(1)

    globex = Tenant.objects.create(slug="globex", name="Globex")
    bob = key_client(new_key("read", "write", "review", tenant=globex), "bob")
    globex_receiver = Receiver().start()
    try:
        globex_receiver.secret = register(bob, globex_receiver.url)["secret"]
        began = time.monotonic()
        response = bob.post("/api/memories", {"key": "home", "value": "Oslo"}, format="json")
        assert response.status_code == 201
        topic_id = new_topic(bob)
        posted = bob.post(
            f"/api/topics/{topic_id}/messages", {"messages": conversation(6)}, format="json"
        )
        assert posted.status_code == 201, posted.content[:500]

        # Globex's delivery and extraction end while the default tenant's attempt trickles.
        wait(
            lambda: (
                response.json()["id"]
                in [event["data"]["id"] for event in globex_receiver.events("memory.created")]
            ),
            "globex's delivery",
            WITHIN_SECONDS,
        )
        delivered = time.monotonic() - began
        wait(
            lambda: ExtractionRun.objects.filter(status=RunStatus.DONE).exists(),
            "globex's extraction to end",
            WITHIN_SECONDS,
        )
        extracted = time.monotonic() - began
        assert extracted < WITHIN_SECONDS
        # Shown with -s (the figures in docs/operations.md).
        print(f"\nglobex: delivered {delivered:.2f} s, extracted {extracted:.2f} s after its save")
        assert receiver.trickling == 1  # one attempt at a time to the slow endpoint
        slow = WebhookDelivery.objects.filter(endpoint_id=endpoint["id"])
        assert slow.count() == SLOW_DELIVERIES
        assert not WebhookAttempt.objects.filter(delivery__in=slow).exists()
    finally:
        receiver.trickle_end()
        globex_receiver.stop()
