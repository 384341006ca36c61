"""Erasure and webhooks: once a user is erased no delivery or attempt holds anything of
theirs (the deliveries of their events are deleted, sent or not); the one left is
user.erased, which holds their id and external id only."""

import pytest

from memories import erasure, services
from memories.models import Scope, User
from tests.conftest import key_client, new_key
from tests.erasure import tables_mentioning, traces_of
from tests.extraction.helpers import extract, new_topic, post
from webhooks.models import WebhookAttempt, WebhookDelivery

pytestmark = pytest.mark.usefixtures("no_embedder")
MARKER = "zq-webhook-marker"


def test_no_delivery_of_an_erased_user_holds_their_data(
    endpoint, receiver, alice, django_capture_on_commit_callbacks, settings
):
    bob = key_client(new_key("read", "write"), "bob")
    with django_capture_on_commit_callbacks(execute=True):
        alice.post("/api/memories", {"key": "home", "value": f"Porto {MARKER}"}, format="json")
        bob.post("/api/memories", {"key": "home", "value": "Oslo"}, format="json")
        topic = new_topic(alice)
        post(alice, topic, f"I moved to Lisbon {MARKER} last month.")
        extract(alice, topic)
    # One delivery of alice's not sent yet (the receiver is gone): pending ones go too.
    settings.WEBHOOK_RETRY_SECONDS = [3600.0]
    receiver.statuses = [500]
    with django_capture_on_commit_callbacks(execute=True):
        alice.post("/api/memories", {"key": "diet", "value": f"Vegan {MARKER}"}, format="json")
    user = User.objects.get(external_id="alice")
    needles = traces_of(user, MARKER)
    assert {"webhooks_webhookdelivery"} <= tables_mentioning(needles)
    assert WebhookDelivery.objects.filter(status="pending").exists()

    reviewer = key_client(new_key("review"), external_id=None)
    with django_capture_on_commit_callbacks(execute=True):
        assert reviewer.delete(f"/api/users/{user.id}").status_code == 204

    [erased] = WebhookDelivery.objects.filter(subject_user_id__isnull=True)
    assert erased.event_type == "user.erased" and erased.status == "delivered"
    # Apart from user.erased (its id and external id, nothing else), nothing of alice's.
    assert tables_mentioning(needles) == {"webhooks_webhookdelivery"}
    assert tables_mentioning(needles - {str(user.id), user.id.hex, "alice"}) == set()
    remaining = WebhookDelivery.objects.exclude(id=erased.id)
    assert remaining.count() == 1 and "Oslo" in remaining.get().body  # bob's
    assert not WebhookAttempt.objects.exclude(delivery__in=[erased, remaining.get()]).exists()


def test_events_written_while_an_erasure_runs_are_dropped_when_it_completes(
    endpoint, alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        alice.post("/api/memories", {"key": "home", "value": f"Porto {MARKER}"}, format="json")
    user = User.objects.get(external_id="alice")
    erasure.erasure_hide(user_id=user.id)
    # A request of the user authenticated before the erasure began writes meanwhile.
    services.memory_create(
        actor=None, scope=Scope.USER, user=user, key="late", value=MARKER, vector=None
    )
    assert WebhookDelivery.objects.filter(subject_user_id=user.id).exists()
    erasure.erasure_finish(user_id=user.id)
    assert not WebhookDelivery.objects.filter(subject_user_id=user.id).exists()
    assert MARKER not in "".join(WebhookDelivery.objects.values_list("body", flat=True))
    assert WebhookDelivery.objects.filter(event_type="user.erased").count() == 1
