"""Service keys: Bearer <key> + X-User-Id acts as an end user."""

import hashlib
import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memories.accounts.keys import principal_for
from memories.accounts.tenants import default_tenant, tenant_get_or_create
from memories.models import ApiKey, Memory, Persona, Scope, User
from tests.conftest import end_user, key_client, new_key
from tests.memories.helpers import assert_error, make_memory, make_pending


def test_the_command_prints_a_key_that_is_stored_only_as_its_hash(db):
    out = io.StringIO()
    call_command("create_api_key", "chat backend", "--scopes", "read,write,review", stdout=out)

    raw_key = out.getvalue().strip()
    key = ApiKey.objects.get()
    assert raw_key.startswith("mem_") and len(raw_key) > 40
    assert key.key_hash == hashlib.sha256(raw_key.encode()).hexdigest()
    assert raw_key not in {key.name, key.prefix, key.key_hash}
    assert raw_key.startswith(key.prefix)
    assert key.scopes == ["read", "write", "review"]
    assert key.account.is_staff
    response = key_client(raw_key).get("/api/memories")
    assert response.status_code == 200, response.content


def test_the_command_refuses_an_unknown_scope(db):
    with pytest.raises(CommandError, match="scopes"):
        call_command("create_api_key", "x", "--scopes", "read,admin", stdout=io.StringIO())
    assert not ApiKey.objects.exists()


def test_a_key_with_a_user_id_acts_as_that_end_user_created_on_first_use(db):
    client = key_client(new_key(), "ext-alice")

    created = client.post(
        "/api/memories", {"key": "city", "value": "Lives in Porto"}, format="json"
    )

    assert created.status_code == 201, created.content
    user = User.objects.get(external_id="ext-alice")
    assert not user.has_usable_password()
    assert created.json()["external_user_id"] == "ext-alice"
    assert created.json()["owner_id"] == str(user.id)
    assert Memory.objects.get().user == user
    listing = client.get("/api/memories").json()
    assert [m["key"] for m in listing["data"]] == ["city"]
    assert listing["data"][0]["external_user_id"] == "ext-alice"


def test_two_keys_reach_the_same_end_user_and_other_end_users_stay_apart(db):
    first, second = new_key(), new_key()
    saved = key_client(first, "ext-alice").post(
        "/api/memories", {"key": "pet", "value": "Has a cat named Miso"}, format="json"
    )
    memory_id = saved.json()["id"]

    assert key_client(second, "ext-alice").get(f"/api/memories/{memory_id}").status_code == 200
    assert_error(key_client(first, "ext-bob").get(f"/api/memories/{memory_id}"), 404, "id")
    # ext-bob only read: a read creates no user (tests/memories/test_api_reads_create_no_user.py).
    assert list(
        User.objects.filter(external_id__in=["ext-alice", "ext-bob"]).values_list(
            "external_id", flat=True
        )
    ) == ["ext-alice"]


def test_a_key_acts_as_an_existing_user_with_that_external_id(owner):
    end_user(owner, "crm-42")
    make_memory(owner, key="language", value="Go")

    listing = key_client(new_key(), "crm-42").get("/api/memories").json()

    assert [m["key"] for m in listing["data"]] == ["language"]
    assert listing["data"][0]["external_user_id"] == "crm-42"


def test_a_key_and_its_existing_end_user_are_read_in_one_query(db):
    raw_key = new_key()
    first = principal_for(authorization=f"Bearer {raw_key}", external_id="ext-alice")
    assert first.user.pk is not None  # created by this first (writing) request

    with CaptureQueriesContext(connection) as queries:
        again = principal_for(authorization=f"Bearer {raw_key}", external_id="ext-alice")
        reading = principal_for(
            authorization=f"Bearer {raw_key}", external_id="ext-alice", creates_user=False
        )
        assert again.user.tenant.slug == reading.user.tenant.slug == first.key.tenant.slug
    assert len(queries) == 2  # one per request; the tenant came with the key
    assert again.user.pk == reading.user.pk == first.user.pk
    # Another tenant's user of the same external id is not joined to this key.
    elsewhere = new_key(tenant=tenant_get_or_create(slug="other-product"))
    theirs = principal_for(authorization=f"Bearer {elsewhere}", external_id="ext-alice")
    assert theirs.user.pk != first.user.pk


def test_without_provisioning_an_unknown_external_user_is_404_until_created(db, settings):
    settings.AUTO_PROVISION_USERS = False
    raw_key = new_key("read", "write", "review")

    assert_error(key_client(raw_key, "ext-new").get("/api/memories"), 404, "X-User-Id")
    assert not User.objects.filter(external_id="ext-new").exists()

    created = key_client(raw_key, None).post(
        "/api/users", {"external_id": "ext-new"}, format="json"
    )
    assert created.status_code == 201, created.content
    assert key_client(raw_key, "ext-new").get("/api/memories").status_code == 200


@pytest.mark.parametrize(
    "authorization",
    ["Bearer mem_not-a-key", "Bearer ", "Bearer"],
)
def test_an_unknown_or_empty_key_is_401(db, authorization):
    client = APIClient()

    response = client.get("/api/memories", HTTP_AUTHORIZATION=authorization, HTTP_X_USER_ID="a")

    assert_error(response, 401)
    assert response["WWW-Authenticate"]
    assert not User.objects.filter(external_id="a").exists()


def test_a_revoked_key_is_401(db):
    raw_key = new_key()
    assert key_client(raw_key).get("/api/memories").status_code == 200

    out = io.StringIO()
    call_command("revoke_api_key", raw_key[:12], stdout=out)

    assert "Revoked" in out.getvalue()
    body = assert_error(key_client(raw_key).get("/api/memories"), 401)
    assert "revoked" in body["detail"]


def test_a_user_endpoint_without_x_user_id_is_400_naming_it(db):
    response = key_client(new_key("read", "write"), None).get("/api/memories")

    assert_error(response, 400, "X-User-Id")
    assert User.objects.filter(external_id__isnull=False).count() == 0


@pytest.mark.parametrize("external_id", ["x" * 256, "tab\there"])
def test_a_malformed_x_user_id_is_400_naming_it(db, external_id):
    response = key_client(new_key(), external_id).get("/api/memories")

    assert_error(response, 400, "X-User-Id")
    assert not User.objects.filter(external_id=external_id).exists()


def test_a_read_key_reads_searches_and_asks_for_context_but_cannot_write(db):
    writer = key_client(new_key("write"), "ext-alice")
    reader = key_client(new_key("read"), "ext-alice")
    saved = writer.post("/api/memories", {"key": "food", "value": "Loves ramen"}, format="json")
    assert saved.status_code == 201

    assert reader.get("/api/memories").status_code == 200
    assert reader.get("/api/memories/search", {"q": "ramen"}).status_code == 200
    context = reader.post("/api/memories/context", {"query": "ramen"}, format="json")
    assert context.status_code == 200, context.content
    assert "ramen" in context.json()["hint"]
    for response in (
        reader.post("/api/memories", {"key": "a", "value": "b"}, format="json"),
        reader.delete(f"/api/memories/{saved.json()['id']}"),
        reader.post(
            "/api/memories/batch", {"memories": [{"key": "a", "value": "b"}]}, format="json"
        ),
    ):
        body = assert_error(response, 403, "scope")
        assert "'write'" in body["detail"]
    assert Memory.objects.filter(deleted_at__isnull=True).count() == 1


def test_a_write_only_key_cannot_read(db):
    body = assert_error(key_client(new_key("write")).get("/api/memories"), 403, "scope")

    assert "'read'" in body["detail"]


def test_review_endpoints_need_the_review_scope(owner):
    make_pending(end_user(owner))

    plain = key_client(new_key("read", "write"), None)
    body = assert_error(plain.get("/api/admin/memories/pending"), 403, "scope")
    assert "'review'" in body["detail"]
    assert_error(plain.get("/api/users"), 403, "scope")

    pending = key_client(new_key("review"), None).get("/api/admin/memories/pending")
    assert pending.status_code == 200, pending.content
    assert [m["key"] for m in pending.json()["data"]] == ["city"]


def test_a_review_key_approves_across_users_and_is_the_actor(owner, other):
    first, second = make_pending(end_user(owner)), make_pending(end_user(other))
    raw_key = new_key("review")

    response = key_client(raw_key, None).post(
        "/api/admin/memories/bulk-approve",
        {"ids": [str(first.id), str(second.id)]},
        format="json",
    )

    assert response.json() == {"approved": 2}
    account = ApiKey.objects.get().account
    first.refresh_from_db()
    assert first.status == "active"
    assert first.revisions.order_by("-id").first().actor == account


def test_persona_scope_writes_need_the_review_scope(db, staff):
    persona = Persona.objects.create(tenant=default_tenant(), name="Barista")
    body = {"scope": "persona", "persona_id": str(persona.id), "key": "menu", "value": "Oat milk"}

    as_end_user = key_client(new_key("read", "write", "review"), "ext-alice")
    assert_error(as_end_user.post("/api/memories", body, format="json"), 403, "scope")

    as_key = key_client(new_key("write", "review"), None)
    created = as_key.post("/api/memories", body, format="json")
    assert created.status_code == 201, created.content
    assert Memory.objects.get().scope == Scope.PERSONA

    without_review = key_client(new_key("read", "write"), None)
    assert_error(without_review.post("/api/personas", {"name": "Chef"}, format="json"), 403)
    made = as_key.post("/api/personas", {"name": "Chef"}, format="json")
    assert made.status_code == 201, made.content


def test_last_used_at_is_kept(db):
    raw_key = new_key()
    assert ApiKey.objects.get().last_used_at is None

    key_client(raw_key).get("/api/memories")

    assert ApiKey.objects.get().last_used_at is not None


def test_tokens_and_sessions_keep_working_beside_keys(api, owner, client):
    new_key()
    make_memory(owner)

    assert api.get("/api/memories").json()["count"] == 1
    client.force_login(owner)
    assert client.get("/api/memories").json()["count"] == 1


def test_an_admin_creates_a_key_in_the_django_admin_and_sees_it_once(db, client):
    staff = User.objects.create_superuser("root", "root@example.com", "pw-root")
    client.force_login(staff)

    response = client.post(
        "/admin/memories/apikey/add/",
        {"name": "support bot", "tenant": str(default_tenant().id), "scopes": ["read"]},
        follow=True,
    )

    assert response.status_code == 200
    key = ApiKey.objects.get()
    assert key.created_by == staff and key.scopes == ["read"]
    shown = [str(m) for m in response.context["messages"]]
    raw_key = next(word for m in shown for word in m.split() if word.startswith("mem_"))
    assert hashlib.sha256(raw_key.encode()).hexdigest() == key.key_hash
    assert key_client(raw_key).get("/api/memories").status_code == 200

    listing = client.get("/admin/memories/apikey/")
    assert raw_key not in listing.content.decode()
    client.post(
        "/admin/memories/apikey/",
        {"action": "revoke", "_selected_action": [str(key.id)]},
    )
    assert_error(key_client(raw_key).get("/api/memories"), 401)
