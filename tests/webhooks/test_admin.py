"""The Django admin: endpoints (never their secret), the delivery log with each delivery's
attempts inline, and the replay action."""

import pytest
from django.test import Client

from memories.accounts.tenants import default_tenant
from memories.models import User
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
def admin(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-root"))
    return client


@pytest.fixture
def delivered(endpoint, alice, receiver, django_capture_on_commit_callbacks):
    receiver.statuses = [500]
    with django_capture_on_commit_callbacks(execute=True):
        alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")
    return WebhookDelivery.objects.get()


def test_the_endpoint_admin_never_shows_the_secret(admin, endpoint):
    page = admin.get(f"/admin/webhooks/webhookendpoint/{endpoint['id']}/change/")
    listed = admin.get("/admin/webhooks/webhookendpoint/")
    assert page.status_code == 200 and listed.status_code == 200
    assert endpoint["url"] in listed.content.decode()
    assert endpoint["secret"] not in page.content.decode() + listed.content.decode()


def test_a_delivery_shows_its_attempts_and_replay_sends_it_again(
    admin, delivered, receiver, django_capture_on_commit_callbacks
):
    listed = admin.get("/admin/webhooks/webhookdelivery/")
    assert listed.status_code == 200 and delivered.message_id in listed.content.decode()
    page = admin.get(f"/admin/webhooks/webhookdelivery/{delivered.id}/change/").content.decode()
    assert "HTTP 500" in page and "memory.created" in page

    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(
            "/admin/webhooks/webhookdelivery/",
            {"action": "replay", "_selected_action": [str(delivered.id)]},
        )
    assert response.status_code == 302
    delivered.refresh_from_db()
    assert delivered.status == "delivered"
    assert [a.outcome for a in delivered.attempts.all()] == ["failed", "delivered"]
    assert [item.webhook_id for item in receiver.received] == [delivered.message_id] * 2


def test_an_endpoint_added_in_the_admin_gets_a_secret(admin, receiver):
    response = admin.post(
        "/admin/webhooks/webhookendpoint/add/",
        {
            "tenant": str(default_tenant().id),
            "url": receiver.url,
            "description": "",
            "events": '["memory.created"]',
            "is_active": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert WebhookEndpoint.objects.get().secret.startswith("whsec_")


def test_the_admin_checks_an_endpoint_as_the_api_does(admin, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    response = admin.post(
        "/admin/webhooks/webhookendpoint/add/",
        {
            "tenant": str(default_tenant().id),
            "url": "http://127.0.0.1/hooks",
            "description": "",
            "events": '["memory.exploded"]',
            "is_active": "on",
        },
    )
    assert response.status_code == 200  # the form again, with its errors
    page = response.content.decode()
    assert "WEBHOOK_ALLOW_PRIVATE" in page and "memory.exploded" in page
    assert not WebhookEndpoint.objects.exists()
