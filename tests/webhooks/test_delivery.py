"""Delivery: a failing receiver gets retries (the periodic sweep sends the due ones), every
attempt is in the API's delivery log and the `webhooks.delivery` log lines, the last failure
leaves the delivery failed, and replay sends the same message (same webhook-id) again."""

import logging
import threading

import pytest

from tests.webhooks.receiver import Receiver
from webhooks.delivery import delivery_attempt
from webhooks.models import WebhookDelivery
from webhooks.tasks import deliver_due_webhooks_task

pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
def save(alice, django_capture_on_commit_callbacks):
    """POST a memory for alice; its deliveries are attempted once at commit (inline here)."""

    def run(key="home", value="Porto"):
        with django_capture_on_commit_callbacks(execute=True):
            response = alice.post("/api/memories", {"key": key, "value": value}, format="json")
        assert response.status_code == 201
        return response.json()

    return run


def log_of(staff_api, endpoint) -> list[dict]:
    response = staff_api.get(f"/api/webhooks/{endpoint['id']}/deliveries")
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def test_a_failing_receiver_gets_retries_and_the_log_shows_them(
    endpoint, receiver, save, staff_api, caplog
):
    receiver.statuses = [500]  # then 200
    caplog.set_level(logging.INFO, logger="webhooks.delivery")
    save()
    [delivery] = log_of(staff_api, endpoint)
    assert delivery["status"] == "pending" and delivery["attempt_count"] == 1
    assert delivery["attempts"][0]["outcome"] == "failed"
    assert delivery["attempts"][0]["status_code"] == 500

    assert deliver_due_webhooks_task.delay().get() == 1  # the retry, due at once here
    assert deliver_due_webhooks_task.delay().get() == 0  # nothing else is due

    [delivery] = log_of(staff_api, endpoint)
    assert delivery["status"] == "delivered" and delivery["next_attempt_at"] is None
    assert [(a["number"], a["outcome"], a["status_code"]) for a in delivery["attempts"]] == [
        (1, "failed", 500),
        (2, "delivered", 200),
    ]
    assert all(a["duration_ms"] >= 0 and a["started_at"] for a in delivery["attempts"])
    assert delivery["payload"]["type"] == "memory.created"
    first, second = receiver.received
    assert first.webhook_id == second.webhook_id == delivery["webhook_id"]
    assert first.body == second.body

    lines = [r.getMessage() for r in caplog.records if r.name == "webhooks.delivery"]
    assert len(lines) == 2
    for number, outcome, line in [(1, "failed", lines[0]), (2, "delivered", lines[1])]:
        assert f"attempt {number} of {delivery['webhook_id']} {outcome}" in line
        assert "memory.created" in line and endpoint["id"] in line


def test_a_delivery_fails_after_its_last_retry_and_replay_sends_it_again(
    endpoint, receiver, save, staff_api, django_capture_on_commit_callbacks
):
    receiver.statuses = [500, 503, 502]  # WEBHOOK_RETRY_SECONDS has two waits: 3 attempts
    save()
    while deliver_due_webhooks_task.delay().get():
        pass
    [delivery] = log_of(staff_api, endpoint)
    assert delivery["status"] == "failed" and delivery["next_attempt_at"] is None
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 503, 502]

    with django_capture_on_commit_callbacks(execute=True):
        replayed = staff_api.post(
            f"/api/webhooks/{endpoint['id']}/deliveries/{delivery['id']}/replay"
        )
    assert replayed.status_code == 202, replayed.json()
    assert replayed.json()["webhook_id"] == delivery["webhook_id"]
    [delivery] = log_of(staff_api, endpoint)
    assert delivery["status"] == "delivered"
    assert [a["outcome"] for a in delivery["attempts"]] == ["failed"] * 3 + ["delivered"]
    assert [item.webhook_id for item in receiver.received] == [delivery["webhook_id"]] * 4
    assert receiver.invalid == []


def test_replay_answers_404_for_another_endpoints_delivery(endpoint, save, staff_api, receiver):
    save()
    delivery = WebhookDelivery.objects.get()
    other = staff_api.post(
        "/api/webhooks", {"url": receiver.url, "events": ["user.erased"]}, format="json"
    ).json()
    for path in [
        f"/api/webhooks/{other['id']}/deliveries/{delivery.id}/replay",
        f"/api/webhooks/{endpoint['id']}/deliveries/not-a-uuid/replay",
    ]:
        response = staff_api.post(path)
        assert response.status_code == 404 and "delivery_id" in response.json()["fields"]


def test_a_receiver_that_answers_too_late_times_out(endpoint, receiver, save, settings, staff_api):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.3
    receiver.hold = threading.Event()  # set only when the receiver stops
    save()
    [delivery] = log_of(staff_api, endpoint)
    [attempt] = delivery["attempts"]
    assert attempt["outcome"] == "timeout" and attempt["status_code"] is None
    assert "Timeout" in attempt["error"]
    assert delivery["status"] == "pending"


def test_an_unreachable_receiver_is_an_error_retried_only_once_due(
    endpoint, save, staff_api, settings
):
    settings.WEBHOOK_RETRY_SECONDS = [60.0]
    gone = Receiver()
    gone.server.server_close()  # nothing listens on this port any more
    staff_api.patch(f"/api/webhooks/{endpoint['id']}", {"url": gone.url}, format="json")
    save()
    delivery = WebhookDelivery.objects.get()
    [attempt] = delivery.attempts.all()
    assert attempt.outcome == "error" and "ConnectError" in attempt.error
    assert delivery.status == "pending" and delivery.next_attempt_at > attempt.started_at
    # Not due for a minute: neither its task delivered again nor the sweep sends it.
    assert delivery_attempt(delivery_id=delivery.id) == "not_due"
    assert deliver_due_webhooks_task.delay().get() == 0
    assert delivery.attempts.count() == 1


def test_an_inactive_endpoint_gets_nothing_until_it_is_active_again(
    endpoint, receiver, save, staff_api
):
    staff_api.patch(f"/api/webhooks/{endpoint['id']}", {"is_active": False}, format="json")
    save()
    assert not WebhookDelivery.objects.exists()
    assert receiver.received == []


def test_the_deliveries_list_is_paginated_newest_first_in_few_queries(
    endpoint, save, staff_api, django_assert_max_num_queries
):
    for n in range(3):
        save(key=f"k{n}", value=f"v{n}")
    with django_assert_max_num_queries(8):
        page = staff_api.get(f"/api/webhooks/{endpoint['id']}/deliveries?page_size=2").json()
    assert page["count"] == 3 and page["next"]
    assert [d["payload"]["data"]["key"] for d in page["data"]] == ["k2", "k1"]
    assert staff_api.get(f"/api/webhooks/{endpoint['id']}/deliveries?x=1").status_code == 400
