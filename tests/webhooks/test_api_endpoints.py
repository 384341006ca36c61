"""Registering endpoints: /api/webhooks for staff and review keys, each tenant its own."""

import pytest
from standardwebhooks import Webhook

from memories.accounts.tenants import tenant_get_or_create
from tests.conftest import key_client, new_key
from tests.webhooks.conftest import register
from webhooks.models import WebhookEndpoint

URL = "https://93.184.215.14/hooks"  # a public address: no lookup needed


@pytest.fixture
def public_only(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False


def test_the_secret_is_shown_once_in_the_standard_webhooks_form(staff_api, public_only):
    created = register(staff_api, URL, ["memory.created"], description="CRM")
    assert created["secret"].startswith("whsec_")
    Webhook(created["secret"])  # the package reads it
    assert WebhookEndpoint.objects.get(id=created["id"]).secret == created["secret"]

    shown = staff_api.get(f"/api/webhooks/{created['id']}").json()
    listed = staff_api.get("/api/webhooks").json()
    assert "secret" not in shown and shown["events"] == ["memory.created"]
    assert listed["count"] == 1 and "secret" not in listed["data"][0]
    assert created["secret"] not in str(listed) + str(shown)


def test_rotating_the_secret_answers_a_new_one_once(staff_api, public_only):
    created = register(staff_api, URL, ["memory.created"])
    rotated = staff_api.post(f"/api/webhooks/{created['id']}/rotate-secret")
    assert rotated.status_code == 200
    assert rotated.json()["secret"].startswith("whsec_")
    assert rotated.json()["secret"] != created["secret"]
    endpoint = WebhookEndpoint.objects.get(id=created["id"])
    assert endpoint.secret == rotated.json()["secret"]


def test_an_endpoint_is_updated_and_deleted(staff_api, public_only):
    created = register(staff_api, URL, ["memory.created"], description="CRM")
    changed = staff_api.patch(
        f"/api/webhooks/{created['id']}",
        {"events": ["memory.deleted", "user.erased"], "is_active": False},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["events"] == ["memory.deleted", "user.erased"]
    assert changed.json()["is_active"] is False
    assert changed.json()["description"] == "CRM"  # what a PATCH leaves out stays
    assert changed.json()["url"] == URL
    assert staff_api.delete(f"/api/webhooks/{created['id']}").status_code == 204
    assert not WebhookEndpoint.objects.exists()
    assert staff_api.get(f"/api/webhooks/{created['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": URL, "events": ["memory.exploded"]}, "events"),
        ({"url": URL, "events": []}, "events"),
        ({"url": "ftp://93.184.215.14/x", "events": ["memory.created"]}, "url"),
        ({"url": "not a url", "events": ["memory.created"]}, "url"),
        ({"url": URL, "events": ["memory.created"], "secret": "mine"}, "secret"),
        ({"events": ["memory.created"]}, "url"),
    ],
)
def test_bad_input_answers_400_naming_the_field(staff_api, public_only, body, field):
    response = staff_api.post("/api/webhooks", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["fields"]
    assert not WebhookEndpoint.objects.exists()


def test_a_patch_is_validated_like_a_create(staff_api, public_only):
    created = register(staff_api, URL, ["memory.created"])
    for body, field in [({"events": ["nope"]}, "events"), ({"url": "http://10.0.0.1/"}, "url")]:
        response = staff_api.patch(f"/api/webhooks/{created['id']}", body, format="json")
        assert response.status_code == 400 and field in response.json()["fields"]
    assert WebhookEndpoint.objects.get().events == ["memory.created"]


def test_unknown_list_parameters_answer_400(staff_api):
    response = staff_api.get("/api/webhooks?stauts=active")
    assert response.status_code == 400 and "stauts" in response.json()["fields"]


def test_a_read_write_key_and_a_plain_user_are_refused(api, public_only):
    key = key_client(new_key("read", "write"), external_id=None)
    for client in (key, api):
        assert client.get("/api/webhooks").status_code == 403
        body = {"url": URL, "events": ["memory.created"]}
        assert client.post("/api/webhooks", body, format="json").status_code == 403
    assert not WebhookEndpoint.objects.exists()


def test_a_review_key_sees_its_own_tenants_endpoints_only(staff_api, public_only):
    staffs = register(staff_api, URL, ["memory.created"])  # the default tenant's
    default_review = key_client(new_key("review"), external_id=None)
    other_tenant = tenant_get_or_create(slug="other-product")
    other_review = key_client(new_key("review", tenant=other_tenant), external_id=None)

    theirs = register(other_review, URL, ["user.erased"])
    assert WebhookEndpoint.objects.get(id=theirs["id"]).tenant == other_tenant

    assert [e["id"] for e in default_review.get("/api/webhooks").json()["data"]] == [staffs["id"]]
    assert [e["id"] for e in other_review.get("/api/webhooks").json()["data"]] == [theirs["id"]]
    for method, path in [
        ("get", ""),
        ("patch", ""),
        ("delete", ""),
        ("post", "/rotate-secret"),
        ("get", "/deliveries"),
    ]:
        answer = getattr(other_review, method)(
            f"/api/webhooks/{staffs['id']}{path}", {}, format="json"
        )
        assert answer.status_code == 404, (method, path)
    assert WebhookEndpoint.objects.get(id=staffs["id"]).secret == staffs["secret"]


def test_a_malformed_id_answers_404(staff_api):
    assert staff_api.get("/api/webhooks/not-a-uuid").status_code == 404
