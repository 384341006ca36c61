"""Tenants (SPEC 13): a key acts for, lists, reviews and erases its own tenant's end users
only; the same X-User-Id through two tenants' keys is two users; the API erases no staff."""

import io

import pytest
from django.core.management import CommandError, call_command

from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
from memories.models import ApiKey, Memory, Status, Tenant, User
from tests.conftest import client_for, key_client, make_user
from tests.memories.helpers import assert_error, make_pending


def key_for(tenant: str, *scopes: str) -> str:
    _, raw_key = api_key_create(
        name=f"{tenant} backend", scopes=scopes, tenant=tenant_get_or_create(slug=tenant)
    )
    return raw_key


def client(raw_key: str, external_id: str | None = None):
    return key_client(raw_key, external_id)


@pytest.fixture
def keys(db) -> dict:
    return {
        "shop": key_for("shop", "read", "write"),
        "shop review": key_for("shop", "review"),
        "clinic": key_for("clinic", "read", "write"),
        "clinic review": key_for("clinic", "review"),
    }


def save(api, key: str, value: str):
    response = api.post("/api/memories", {"key": key, "value": value}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_the_same_external_id_through_two_tenants_is_two_users(keys):
    shop_memory = save(client(keys["shop"], "user-42"), "home", "Lives in Lisbon")
    clinic_memory = save(client(keys["clinic"], "user-42"), "home", "Lives in Oslo")

    users = User.objects.filter(external_id="user-42")
    assert sorted(u.tenant.slug for u in users) == ["clinic", "shop"]
    assert shop_memory["id"] != clinic_memory["id"]
    assert clinic_memory["superseded_ids"] == []  # not the shop user's key
    shop_list = client(keys["shop"], "user-42").get("/api/memories").json()["data"]
    assert [m["value"] for m in shop_list] == ["Lives in Lisbon"]
    found = (
        client(keys["clinic"], "user-42")
        .get("/api/memories/search", {"q": "where do I live"})
        .json()
    )
    assert [m["value"] for m in found["data"]] == ["Lives in Oslo"]
    other = client(keys["clinic"], "user-42").get(f"/api/memories/{shop_memory['id']}")
    assert_error(other, 404, "id")


def test_a_review_key_lists_and_erases_its_own_tenants_end_users_only(keys, staff):
    save(client(keys["shop"], "alice"), "diet", "Vegetarian")
    save(client(keys["clinic"], "bob"), "diet", "Vegan")
    alice = User.objects.get(external_id="alice")
    bob = User.objects.get(external_id="bob")
    clinic = client(keys["clinic review"])

    listed = clinic.get("/api/users").json()["data"]

    assert [u["external_id"] for u in listed] == ["bob"]
    assert clinic.get("/api/users", {"external_id": "alice"}).json()["data"] == []
    assert_error(clinic.get(f"/api/users/{alice.id}"), 404, "id")
    assert_error(clinic.delete(f"/api/users/{alice.id}"), 404, "id")
    assert User.objects.filter(id=alice.id).exists()
    assert_error(clinic.delete(f"/api/users/{staff.id}"), 404, "id")
    assert clinic.delete(f"/api/users/{bob.id}").status_code == 204
    assert not User.objects.filter(id=bob.id).exists()


def test_users_created_by_a_review_key_are_of_its_tenant(keys):
    created = client(keys["clinic review"]).post(
        "/api/users", {"external_id": "carol"}, format="json"
    )

    assert created.status_code == 201, created.content
    assert User.objects.get(external_id="carol").tenant.slug == "clinic"
    again = client(keys["shop review"]).post("/api/users", {"external_id": "carol"}, format="json")
    assert again.status_code == 201  # another tenant's carol
    assert User.objects.filter(external_id="carol").count() == 2


def test_the_review_routes_of_a_key_see_its_tenants_memories_only(keys):
    save(client(keys["shop"], "alice"), "x", "y")  # creates the shop's alice
    save(client(keys["clinic"], "bob"), "x", "y")
    alice_pending = make_pending(User.objects.get(external_id="alice"))
    bob_pending = make_pending(User.objects.get(external_id="bob"))
    clinic = client(keys["clinic review"])

    pending = clinic.get("/api/admin/memories/pending").json()["data"]
    approved = clinic.post(
        "/api/admin/memories/bulk-approve",
        {"ids": [str(alice_pending.id), str(bob_pending.id)]},
        format="json",
    )

    assert [m["id"] for m in pending] == [str(bob_pending.id)]
    assert approved.json() == {"approved": 1}
    assert Memory.objects.get(id=alice_pending.id).status == Status.PENDING_REVIEW
    assert Memory.objects.get(id=bob_pending.id).status == Status.ACTIVE


def test_a_local_staff_login_still_reviews_every_tenant(keys, staff):
    save(client(keys["shop"], "alice"), "x", "y")
    save(client(keys["clinic"], "bob"), "x", "y")
    for external_id in ("alice", "bob"):
        make_pending(User.objects.get(external_id=external_id))

    pending = client_for(staff).get("/api/admin/memories/pending").json()["data"]
    users = client_for(staff).get("/api/users").json()["data"]

    assert len(pending) == 2
    assert sorted(u["external_id"] for u in users) == ["alice", "bob"]


def test_the_api_erases_no_staff_or_superuser_account(db):
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    staff = make_user("reviewer", is_staff=True)

    for account in (admin, staff):
        body = assert_error(
            client_for(account).post("/api/me/erase", {"confirm": account.username}, format="json"),
            403,
            "id",
        )
        assert "admin" in body["detail"]
        assert User.objects.filter(id=account.id).exists()


def test_create_api_key_takes_a_tenant(db):
    out, err = io.StringIO(), io.StringIO()

    call_command("create_api_key", "crm", "--tenant", "crm-eu", stdout=out, stderr=err)

    assert "of tenant 'crm-eu'" in err.getvalue()
    key = ApiKey.objects.get(name="crm")
    assert key.tenant.slug == "crm-eu" and key.account.tenant == key.tenant
    # A write creates the end user (a read creates none), in the key's tenant.
    saved = client(out.getvalue().strip(), "dave").post(
        "/api/memories", {"key": "city", "value": "Lives in Porto"}, format="json"
    )
    assert saved.status_code == 201, saved.content[:300]
    assert User.objects.get(external_id="dave").tenant == key.tenant
    with pytest.raises(CommandError, match="tenant"):
        call_command("create_api_key", "x", "--tenant", "no spaces", stdout=out, stderr=err)
    assert not Tenant.objects.filter(slug="no spaces").exists()


def test_a_review_keys_filter_reaches_its_tenants_memories_only(keys):
    """Issue 46: a filter in bulk review and the pending list never reaches past the tenant,
    and a key's filtered reads see its own end user's memories only."""
    save(client(keys["shop"], "alice"), "x", "y")
    save(client(keys["clinic"], "bob"), "x", "y")
    alice_pending = make_pending(User.objects.get(external_id="alice"))
    bob_pending = make_pending(User.objects.get(external_id="bob"))
    Memory.objects.filter(id__in=[alice_pending.id, bob_pending.id]).update(metadata={"app": "ios"})
    clinic = client(keys["clinic review"])
    everything = '{"metadata.app": "ios"}'

    pending = clinic.get("/api/admin/memories/pending", {"filter": everything}).json()["data"]
    approved = clinic.post(
        "/api/admin/memories/bulk-approve", {"filter": {"metadata.app": "ios"}}, format="json"
    )
    listed = client(keys["clinic"], "bob").get(
        "/api/memories", {"filter": everything, "status": "active"}
    )

    assert [m["id"] for m in pending] == [str(bob_pending.id)]
    assert approved.json() == {"approved": 1}
    assert Memory.objects.get(id=alice_pending.id).status == Status.PENDING_REVIEW
    assert [m["id"] for m in listed.json()["data"]] == [str(bob_pending.id)]
