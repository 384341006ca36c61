"""Personas belong to a tenant (SPEC 4 and 13): a key's persona is its own tenant's; its
tenant's users recall its memories and its staff change them; local staff logins reach every
tenant's personas and pick the tenant of a new one. (Another tenant's keys walking every
route: test_persona_tenancy.)"""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories import services
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import default_tenant, tenant_get_or_create
from memories.models import Memory, Persona, Scope, Tenant, Topic
from tests.conftest import client_for, key_client, make_user
from tests.memories.helpers import assert_error


def key_for(tenant: str, *scopes: str) -> str:
    _, raw_key = api_key_create(
        name=f"{tenant} {'+'.join(scopes)}",
        scopes=scopes,
        tenant=tenant_get_or_create(slug=tenant),
    )
    return raw_key


def persona_of(tenant: str, name: str = "Concierge") -> Persona:
    response = key_client(key_for(tenant, "review"), None).post(
        "/api/personas", {"name": name}, format="json"
    )
    assert response.status_code == 201, response.content
    return Persona.objects.get(id=response.json()["id"])


def test_a_persona_a_key_creates_is_its_tenants_whatever_tenant_it_names(db):
    tenant_get_or_create(slug="globex")
    review = key_client(key_for("acme", "review"), None)

    made = review.post("/api/personas", {"name": "Concierge"}, format="json")
    elsewhere = review.post(
        "/api/personas", {"name": "Concierge", "tenant": "globex"}, format="json"
    )

    assert made.status_code == 201
    assert made.json()["tenant"] == "acme"
    assert Persona.objects.get(id=made.json()["id"]).tenant.slug == "acme"
    assert_error(elsewhere, 400, "tenant")
    assert Persona.objects.count() == 1


def test_a_personas_tenant_cannot_be_changed(db):
    persona = persona_of("acme")
    response = key_client(key_for("acme", "review"), None).patch(
        f"/api/personas/{persona.id}", {"tenant": "acme"}, format="json"
    )

    assert_error(response, 400, "tenant")


def test_a_local_staff_login_names_the_tenant_when_there_are_several(db):
    staff = client_for(make_user("boss", is_staff=True))
    default_tenant()
    tenant_get_or_create(slug="acme")

    unnamed = staff.post("/api/personas", {"name": "Concierge"}, format="json")
    named = staff.post("/api/personas", {"name": "Concierge", "tenant": "acme"}, format="json")

    assert_error(unnamed, 400, "tenant")
    assert named.status_code == 201
    assert Persona.objects.get().tenant.slug == "acme"


def test_a_local_staff_login_gets_the_only_tenant_without_naming_it(db):
    Tenant.objects.exclude(slug="acme").delete()
    tenant_get_or_create(slug="acme")

    response = client_for(make_user("boss", is_staff=True)).post(
        "/api/personas", {"name": "Concierge"}, format="json"
    )

    assert response.status_code == 201
    assert response.json()["tenant"] == "acme"


def test_local_staff_logins_keep_their_reach_to_every_tenants_personas(db):
    acme, globex = persona_of("acme", "Acme helper"), persona_of("globex", "Globex helper")
    memory = services.memory_create(
        actor=None, key="tip", value="Recommend anvils", scope=Scope.PERSONA, persona=acme
    )
    staff = client_for(make_user("boss", is_staff=True))

    listed = staff.get("/api/personas").json()["data"]
    renamed = staff.patch(f"/api/personas/{globex.id}", {"name": "Globex guide"}, format="json")
    persona_memories = staff.get("/api/memories", {"scope": "persona"}).json()["data"]
    edited = staff.patch(
        f"/api/memories/{memory.id}", {"value": "Recommend rockets"}, format="json"
    )

    assert sorted(p["name"] for p in listed) == ["Acme helper", "Globex helper"]
    assert renamed.status_code == 200
    assert [m["id"] for m in persona_memories] == [str(memory.id)]
    assert edited.status_code == 200
    assert Memory.objects.get(id=edited.json()["id"]).value == "Recommend rockets"


def test_a_local_login_that_is_not_staff_reaches_the_default_tenants_personas(db):
    acme = persona_of("acme", "Acme helper")
    default = services.persona_create(
        actor=make_user("boss", is_staff=True), name="House helper", tenant=default_tenant()
    )
    owner = client_for(make_user("owner"))

    listed = owner.get("/api/personas").json()["data"]

    assert [p["id"] for p in listed] == [str(default.id)]
    assert_error(owner.get(f"/api/personas/{acme.id}"), 404, "id")


def test_within_a_tenant_users_recall_persona_memories_and_only_staff_change_them(db):
    persona = persona_of("acme")
    review = key_client(key_for("acme", "read", "write", "review"), None)
    created = review.post(
        "/api/memories",
        {
            "key": "tip",
            "value": "Recommend the anvils",
            "scope": "persona",
            "persona_id": str(persona.id),
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    alice = key_client(key_for("acme", "read", "write"), "alice")

    context = alice.post(
        "/api/memories/context", {"query": "anvils", "persona_id": str(persona.id)}, format="json"
    )
    by_user = alice.patch(
        f"/api/memories/{created.json()['id']}", {"value": "Recommend globex"}, format="json"
    )
    by_staff = review.patch(
        f"/api/memories/{created.json()['id']}", {"value": "Recommend the rockets"}, format="json"
    )

    assert "Recommend the anvils" in context.json()["hint"]
    assert_error(by_user, 404, "id")
    assert by_staff.status_code == 200
    assert Memory.objects.get(id=created.json()["id"]).value == "Recommend the rockets"


def test_a_topic_naming_another_tenants_persona_brings_none_of_its_memories(db):
    """A topic made before personas had tenants may name another tenant's persona: recall
    through it leaves that persona out."""
    persona = persona_of("acme")
    services.memory_create(
        actor=None, key="tip", value="Recommend the anvils", scope=Scope.PERSONA, persona=persona
    )
    mallory = key_client(key_for("globex", "read", "write"), "mallory")
    topic_id = mallory.post("/api/topics", {"title": "t"}, format="json").json()["id"]
    Topic.objects.filter(id=topic_id).update(persona=persona)  # as an old row may

    context = mallory.post(
        "/api/memories/context", {"query": "anvils", "topic_id": topic_id}, format="json"
    )

    assert context.status_code == 200
    assert "anvils" not in context.json()["hint"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_personas_the_default_tenant_making_it_if_missing():
    executor = MigrationExecutor(connection)
    before = [("memories", "0019_covering_keyword_indexes")]
    after = [("memories", "0020_personas_of_tenants")]
    executor.migrate(before)
    old_apps = executor.loader.project_state(before).apps
    old_apps.get_model("memories", "Tenant").objects.all().delete()
    old_apps.get_model("memories", "Persona").objects.create(name="Old helper")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    try:
        persona = Persona.objects.get(name="Old helper")
        assert persona.tenant.slug == "default"
        assert Tenant.objects.count() == 1
    finally:
        # The later migrations again, so the tests after this one find today's schema.
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.parametrize("slug", ["a\u0000b", "no spaces", 7])
def test_a_tenant_that_is_not_a_slug_is_a_400_naming_tenant_on_create_and_patch(db, slug):
    review = key_client(key_for("acme", "review"), None)
    persona = persona_of("acme")

    created = review.post("/api/personas", {"name": "Other", "tenant": slug}, format="json")
    patched = review.patch(f"/api/personas/{persona.id}", {"tenant": slug}, format="json")

    assert_error(created, 400, "tenant")
    assert_error(patched, 400, "tenant")
    assert Persona.objects.count() == 1
