"""Erasure: POST /api/me/erase and DELETE /api/users/{id} leave no row of the user in any
table of the database, vector and keyword tables included."""

from io import StringIO

import pytest
from django.conf import settings as django_settings
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from memories import erasure
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import default_tenant, tenant_get_or_create
from memories.models import ApiKey, Memory, Persona, Scope, User
from memories.tasks import finish_erasures_task
from tests.conftest import client_for, end_user
from tests.erasure import tables_mentioning, traces_of
from tests.memories.helpers import assert_error, make_memory, stored_rows

MARKER = "quokka7781"  # in every text of the victim, so a leftover copy is found


@pytest.fixture
def victim(db, client):
    """A user with data everywhere: memories of every own scope (one deleted, one pending,
    edited ones with revisions), a project, topics with messages and an extraction run, a
    work session, a token and a browser session."""
    user = end_user(
        User.objects.create_user(username=f"victim-{MARKER}", password="pw"), f"ext-{MARKER}"
    )
    api = client_for(user)
    persona = Persona.objects.create(tenant=default_tenant(), name="Barista")
    project = api.post("/api/projects", {"name": f"project {MARKER}"}, format="json").json()
    topic = api.post(
        "/api/topics",
        {"title": f"chat {MARKER}", "persona_id": str(persona.id), "project_id": project["id"]},
        format="json",
    ).json()
    for text in (f"My name is Ada {MARKER}.", f"I prefer green tea, {MARKER}."):
        posted = api.post(
            f"/api/topics/{topic['id']}/messages", {"role": "user", "content": text}, format="json"
        )
        assert posted.status_code == 201, posted.content
    extracted = api.post(f"/api/memories/extract/{topic['id']}")
    assert extracted.status_code == 202 and extracted.json()["status"] == "done"
    session = api.post("/api/work-sessions", {"project_id": project["id"]}, format="json").json()
    api.post(
        f"/api/work-sessions/{session['id']}/messages",
        {"role": "user", "content": f"Deploy with make ship {MARKER}"},
        format="json",
    )
    memories = [
        api.post("/api/memories", body, format="json").json()
        for body in (
            {"key": "city", "value": f"Lives in Porto {MARKER}"},
            {
                "key": "stack",
                "value": f"Django {MARKER}",
                "scope": "project",
                "project_id": project["id"],
            },
            {
                "key": "drink",
                "value": f"Oat flat white {MARKER}",
                "scope": "persona_user",
                "persona_id": str(persona.id),
            },
        )
    ]
    api.patch(
        f"/api/memories/{memories[0]['id']}", {"value": f"Lives in Lisbon {MARKER}"}, format="json"
    )
    api.delete(f"/api/memories/{memories[1]['id']}")
    api.get("/api/memories/search", {"q": "Lisbon"})
    client.force_login(user)
    # A failed password login: django-axes keeps the username with the attempt.
    wrong = {"username": user.username, "password": "wrong"}
    assert APIClient().post("/api/auth/token", wrong, format="json").status_code == 400
    assert Memory.objects.filter(user=user, status="pending_review").exists()
    assert Memory.objects.filter(user=user, deleted_at__isnull=False).exists()
    return user


@pytest.fixture
def bystander(db):
    """Another user whose data must survive the erasure untouched."""
    user = User.objects.create_user(username="bystander", password="pw")
    make_memory(user, key="city", value="Lives in Oslo")
    client_for(user)
    return user


def test_a_user_erases_themselves_and_no_row_of_theirs_is_left(victim, bystander):
    needles = traces_of(victim, MARKER)
    assert tables_mentioning(needles), "the fixture should have left traces to erase"
    bystander_rows = stored_rows()

    response = client_for(victim).post("/api/me/erase", {"confirm": victim.username}, format="json")

    assert response.status_code == 204, response.content
    assert tables_mentioning(needles) == set()
    assert not User.objects.filter(id=victim.id).exists()
    assert not any(
        s.get_decoded().get("_auth_user_id") == str(victim.id) for s in Session.objects.all()
    )
    assert Memory.objects.filter(user=bystander).count() == 1
    assert stored_rows()["memories"] == 1 and bystander_rows["memories"] > 1
    assert client_for(bystander).get("/api/memories").json()["count"] == 1


def test_erasure_needs_the_username_or_external_id_as_confirmation(victim):
    api = client_for(victim)
    before = stored_rows()

    assert_error(api.post("/api/me/erase", {"confirm": "someone"}, format="json"), 400, "confirm")
    assert_error(api.post("/api/me/erase", {}, format="json"), 400, "confirm")

    assert stored_rows() == before
    response = api.post("/api/me/erase", {"confirm": victim.external_id}, format="json")
    assert response.status_code == 204
    assert not User.objects.filter(id=victim.id).exists()


def test_an_end_user_is_erased_through_a_key_acting_for_them(victim):
    _, raw_key = api_key_create(name="backend", scopes=["write"])
    needles = traces_of(victim, MARKER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}", HTTP_X_USER_ID=victim.external_id)

    response = client.post("/api/me/erase", {"confirm": victim.external_id}, format="json")

    assert response.status_code == 204, response.content
    assert tables_mentioning(needles) == set()


def test_a_review_key_erases_a_user_with_delete(victim, bystander):
    _, raw_key = api_key_create(name="backend", scopes=["review"])
    needles = traces_of(victim, MARKER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")

    response = client.delete(f"/api/users/{victim.id}")

    assert response.status_code == 204, response.content
    assert tables_mentioning(needles) == set()
    assert User.objects.filter(id=bystander.id).exists()
    assert_error(client.delete(f"/api/users/{victim.id}"), 404, "id")


def test_users_cannot_erase_other_users(victim, bystander):
    response = client_for(bystander).delete(f"/api/users/{victim.id}")

    assert_error(response, 403)
    assert User.objects.filter(id=victim.id).exists()


def test_an_api_keys_own_account_cannot_be_erased(db, staff_api):
    key, raw_key = api_key_create(name="backend", scopes=["review", "write"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")

    assert_error(
        client.post("/api/me/erase", {"confirm": key.account.username}, format="json"), 403
    )
    assert staff_api.get(f"/api/users/{key.account_id}").status_code == 404
    assert ApiKey.objects.filter(id=key.id).exists()


def test_erasing_a_user_keeps_persona_memories_they_never_owned(victim, staff):
    persona = Persona.objects.get()
    shared = make_memory(staff, key="menu", value="Oat milk", scope=Scope.PERSONA, persona=persona)

    client_for(victim).post("/api/me/erase", {"confirm": victim.username}, format="json")

    assert Memory.objects.filter(id=shared.id).exists()


# An erasure runs in short transactions (memories.erasure): the user is hidden first, then
# their memories go in batches, then the rest. A crash can stop it between any two.


def review_client() -> APIClient:
    _, raw_key = api_key_create(name="backend", scopes=["review"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


def crash_after_batches(monkeypatch, batches: int) -> None:
    """The process dies after this many batches of one memory (the erasure stops there)."""
    done = []
    real_batch = erasure.erasure_memory_batch

    def batch_then_crash(*, user_id, size=None):
        if len(done) == batches:
            raise KeyboardInterrupt("killed")
        done.append(real_batch(user_id=user_id, size=1))
        return done[-1]

    monkeypatch.setattr(erasure, "erasure_memory_batch", batch_then_crash)


def test_a_user_being_erased_is_hidden_at_once_and_their_external_id_names_a_new_user(
    victim, staff_api
):
    token = client_for(victim)  # the victim's own token, from before the erasure
    review = review_client()
    memories = Memory.objects.filter(user=victim).count()

    erasure.erasure_hide(user_id=victim.id)  # and the process dies here

    assert token.get("/api/me").status_code == 401
    assert review.get("/api/users").json()["count"] == 0
    assert_error(review.get(f"/api/users/{victim.id}"), 404, "id")
    assert staff_api.get("/api/users", {"external_id": f"ext-{MARKER}"}).json()["count"] == 0
    _, write_key = api_key_create(name="product", scopes=["read", "write"])
    product = APIClient()
    product.credentials(HTTP_AUTHORIZATION=f"Bearer {write_key}", HTTP_X_USER_ID=f"ext-{MARKER}")
    me = product.get("/api/me").json()
    assert me["id"] != str(victim.id) and me["external_id"] == f"ext-{MARKER}"
    assert product.get("/api/memories").json()["count"] == 0
    hidden = User.objects.get(id=victim.id)
    assert not hidden.is_active and hidden.erasure_started_at is not None
    assert Memory.objects.filter(user=victim).count() == memories  # nothing deleted yet


def test_an_erasure_stopped_after_some_batches_is_finished_by_deleting_again(
    victim, bystander, monkeypatch
):
    needles = traces_of(victim, MARKER)
    memories = Memory.objects.filter(user=victim).count()
    review = review_client()
    crash_after_batches(monkeypatch, 2)

    with pytest.raises(KeyboardInterrupt):
        review.delete(f"/api/users/{victim.id}")

    assert Memory.objects.filter(user=victim).count() == memories - 2
    assert tables_mentioning(needles)
    assert_error(review.get(f"/api/users/{victim.id}"), 404, "id")
    monkeypatch.undo()
    response = review.delete(f"/api/users/{victim.id}")
    assert response.status_code == 204, response.content
    assert tables_mentioning(needles) == set()
    assert_error(review.delete(f"/api/users/{victim.id}"), 404, "id")
    assert Memory.objects.filter(user=bystander).count() == 1


def test_a_review_key_of_another_tenant_cannot_finish_an_erasure(victim):
    erasure.erasure_hide(user_id=victim.id)
    _, raw_key = api_key_create(
        name="other", scopes=["review"], tenant=tenant_get_or_create(slug="other")
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")

    assert_error(client.delete(f"/api/users/{victim.id}"), 404, "id")
    assert User.objects.filter(id=victim.id).exists()


def test_finish_erasures_finishes_what_a_crash_stopped(victim, bystander, monkeypatch):
    needles = traces_of(victim, MARKER)
    crash_after_batches(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        client_for(victim).post("/api/me/erase", {"confirm": victim.username}, format="json")
    monkeypatch.undo()
    before = stored_rows()

    listed = StringIO()
    call_command("finish_erasures", "--dry-run", stdout=listed)
    assert str(victim.id) in listed.getvalue() and "1 erasures pending" in listed.getvalue()
    assert stored_rows() == before
    call_command("finish_erasures", "--started-before", "3600", stdout=StringIO())
    assert stored_rows() == before  # started just now: maybe still under way
    finished = StringIO()
    call_command("finish_erasures", stdout=finished)

    assert "Finished 1 erasures" in finished.getvalue()
    assert tables_mentioning(needles) == set()
    assert Memory.objects.filter(user=bystander).count() == 1


def test_celery_beat_finishes_erasures_stopped_long_enough_ago(victim):
    entry = django_settings.CELERY_BEAT_SCHEDULE["finish-erasures"]
    assert entry["task"] == "memories.tasks.finish_erasures_task"
    assert entry["schedule"] == 600
    needles = traces_of(victim, MARKER)
    erasure.erasure_hide(user_id=victim.id)

    assert finish_erasures_task.delay().get() == 0  # started just now: maybe under way
    assert User.objects.filter(id=victim.id).exists()
    User.objects.filter(id=victim.id).update(
        erasure_started_at=timezone.now() - erasure.ERASURE_RESUME_AFTER
    )
    assert finish_erasures_task.delay().get() == 1
    assert tables_mentioning(needles) == set()
