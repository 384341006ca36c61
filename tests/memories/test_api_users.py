"""GET/POST /api/users, GET /api/me: end users as a product backend manages them."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import User
from tests.conftest import end_user, scoped_client
from tests.memories.helpers import assert_error, make_memory, make_pending


def test_a_review_key_creates_an_end_user_and_lists_it_with_counts(db):
    client = scoped_client("review", external_id=None)

    created = client.post("/api/users", {"external_id": "crm-7"}, format="json")

    assert created.status_code == 201, created.content
    body = created.json()
    assert body["external_id"] == "crm-7" and body["active"] == 0 and body["pending"] == 0
    user = User.objects.get(external_id="crm-7")
    make_memory(user)
    make_pending(user)
    listing = client.get("/api/users").json()
    assert [(u["external_id"], u["active"], u["pending"]) for u in listing["data"]] == [
        ("crm-7", 1, 1)
    ]
    assert client.get(f"/api/users/{user.id}").json()["active"] == 1
    assert client.get("/api/users", {"external_id": "crm-7"}).json()["count"] == 1
    assert client.get("/api/users", {"external_id": "nope"}).json()["count"] == 0


def test_the_users_list_leaves_logins_and_key_accounts_out_and_counts_in_few_queries(
    staff_api, staff
):
    for n in range(5):
        user = User.objects.create_user(username=f"user{n}", external_id=f"ext-{n}")
        make_pending(user)
    scoped_client("review", external_id=None)

    with CaptureQueriesContext(connection) as queries:
        listing = staff_api.get("/api/users").json()

    assert listing["count"] == 5  # the end users: not the staff login, not the key's account
    assert {u["username"] for u in listing["data"]} == {f"user{n}" for n in range(5)}
    assert len(queries) <= 4, [q["sql"] for q in queries]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({}, 400, "external_id"),
        ({"external_id": ""}, 400, "external_id"),
        ({"external_id": "x" * 256}, 400, "external_id"),
        ({"external_id": "bad\nid"}, 400, "external_id"),
        ({"external_id": "taken"}, 409, "external_id"),
        ({"external_id": "ok", "is_staff": True}, 400, "is_staff"),
    ],
)
def test_bad_user_creates_name_the_field(staff_api, body, status, field):
    end_user(User.objects.create_user(username="t"), "taken")

    assert_error(staff_api.post("/api/users", body, format="json"), status, field)

    assert not User.objects.filter(external_id="ok").exists()


def test_users_are_for_review_keys_and_staff_only(api, db):
    assert_error(api.get("/api/users"), 403)
    assert_error(api.post("/api/users", {"external_id": "x"}, format="json"), 403)
    assert_error(scoped_client("read", "write", external_id="a").get("/api/users"), 403, "scope")
    assert not User.objects.filter(external_id="x").exists()


def test_an_unknown_user_id_is_404(staff_api):
    assert_error(staff_api.get("/api/users/not-a-uuid"), 404, "id")
    assert_error(staff_api.get("/api/users/00000000-0000-0000-0000-000000000000"), 404, "id")


def test_me_says_who_the_request_acts_as(api, owner):
    assert api.get("/api/me").json() == {
        "id": str(owner.id),
        "username": "owner",
        "external_id": None,
        "is_staff": False,
    }
    me = scoped_client("read", external_id="crm-9").get("/api/me").json()
    assert me["external_id"] == "crm-9"
