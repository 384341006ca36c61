"""POST /api/memories: scopes, owners, defaults and clamping."""

import uuid

import pytest

from memories.accounts.tenants import default_tenant
from memories.models import Memory, MemoryEmbedding, MemoryRevision, Persona, Project
from tests.memories.helpers import NOTHING_STORED, assert_error, stored_rows

URL = "/api/memories"


@pytest.fixture
def persona(db) -> Persona:
    return Persona.objects.create(tenant=default_tenant(), name="Tutor")


@pytest.fixture
def project(owner) -> Project:
    return Project.objects.create(owner=owner, name="Backend")


def test_it_creates_a_user_scope_memory_by_default(api, owner):
    response = api.post(URL, {"key": "language", "value": "Go with Gin"}, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["scope"] == "user"
    assert body["owner_id"] == str(owner.id)
    assert body["user_id"] is None
    assert body["project_id"] is None
    assert body["persona_id"] is None
    assert body["topic_id"] is None
    assert body["source"] == "manual"
    assert body["status"] == "active"
    assert body["importance"] == 0.5
    assert body["confidence"] == 1.0
    memory = Memory.objects.get(id=body["id"])
    assert memory.scope == "user"
    assert memory.user_id == owner.id
    assert memory.persona_id is None and memory.project_id is None
    assert (memory.key, memory.value) == ("language", "Go with Gin")
    assert memory.deleted_at is None


def test_it_records_a_create_revision_and_an_embedding(api, owner):
    response = api.post(URL, {"key": "language", "value": "Go with Gin"}, format="json")

    memory_id = response.json()["id"]
    revision = MemoryRevision.objects.get(memory_id=memory_id)
    assert revision.action == "create"
    assert revision.actor_id == owner.id
    assert revision.before is None
    assert revision.after["value"] == "Go with Gin"
    assert MemoryEmbedding.objects.filter(memory_id=memory_id).exists()


def test_it_accepts_global_as_another_name_for_user_scope(api, owner):
    response = api.post(URL, {"scope": "global", "key": "k", "value": "v"}, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["scope"] == "user"
    assert response.json()["owner_id"] == str(owner.id)
    assert Memory.objects.get(id=response.json()["id"]).scope == "user"


def test_it_rejects_session_scope(api):
    response = api.post(URL, {"scope": "session", "key": "k", "value": "v"}, format="json")

    assert_error(response, 400, "scope")
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_project_scope_without_project_id(api):
    response = api.post(URL, {"scope": "project", "key": "k", "value": "v"}, format="json")

    assert_error(response, 400, "project_id")
    assert stored_rows() == NOTHING_STORED


def test_it_creates_a_project_memory_in_the_callers_project(api, owner, project):
    response = api.post(
        URL,
        {"scope": "project", "project_id": str(project.id), "key": "db", "value": "Postgres"},
        format="json",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["scope"] == "project"
    assert body["project_id"] == str(project.id)
    assert body["owner_id"] == str(owner.id)
    assert body["user_id"] is None
    memory = Memory.objects.get(id=body["id"])
    assert (memory.project_id, memory.user_id) == (project.id, owner.id)


def test_it_rejects_another_users_project(api, other):
    foreign = Project.objects.create(owner=other, name="Theirs")

    response = api.post(
        URL,
        {"scope": "project", "project_id": str(foreign.id), "key": "k", "value": "v"},
        format="json",
    )

    assert_error(response, 400, "project_id")
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_an_unknown_project(api):
    response = api.post(
        URL,
        {"scope": "project", "project_id": str(uuid.uuid4()), "key": "k", "value": "v"},
        format="json",
    )

    assert_error(response, 400, "project_id")
    assert stored_rows() == NOTHING_STORED


@pytest.mark.parametrize("scope", ["user", "global"])
def test_it_rejects_project_id_with_user_scope(api, project, scope):
    response = api.post(
        URL,
        {"scope": scope, "project_id": str(project.id), "key": "k", "value": "v"},
        format="json",
    )

    assert_error(response, 400, "project_id")
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_project_id_without_a_scope(api, project):
    response = api.post(
        URL, {"project_id": str(project.id), "key": "k", "value": "v"}, format="json"
    )

    assert_error(response, 400, "project_id")
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_a_topic_id_on_a_manual_memory(api, owner):
    response = api.post(
        URL, {"topic_id": str(uuid.uuid4()), "key": "k", "value": "v"}, format="json"
    )

    assert_error(response, 400, "topic_id")
    assert stored_rows() == NOTHING_STORED


def test_it_lets_staff_create_a_persona_memory(staff_api, persona):
    response = staff_api.post(
        URL,
        {"scope": "persona", "persona_id": str(persona.id), "key": "tone", "value": "Be brief"},
        format="json",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["scope"] == "persona"
    assert body["owner_id"] == str(persona.id)
    assert body["user_id"] is None
    assert body["persona_id"] == str(persona.id)
    memory = Memory.objects.get(id=body["id"])
    assert memory.persona_id == persona.id
    assert memory.user_id is None


def test_it_requires_a_persona_id_for_persona_scope(staff_api):
    response = staff_api.post(URL, {"scope": "persona", "key": "k", "value": "v"}, format="json")

    assert_error(response, 400, "persona_id")
    assert stored_rows() == NOTHING_STORED


def test_it_forbids_persona_scope_to_non_staff(api, persona):
    response = api.post(
        URL,
        {"scope": "persona", "persona_id": str(persona.id), "key": "k", "value": "v"},
        format="json",
    )

    assert_error(response, 403)
    assert stored_rows() == NOTHING_STORED


def test_it_lets_a_user_create_a_persona_user_memory(api, owner, persona):
    response = api.post(
        URL,
        {"scope": "persona_user", "persona_id": str(persona.id), "key": "k", "value": "v"},
        format="json",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["scope"] == "persona_user"
    assert body["owner_id"] == str(persona.id)
    assert body["user_id"] == str(owner.id)
    memory = Memory.objects.get(id=body["id"])
    assert (memory.persona_id, memory.user_id) == (persona.id, owner.id)


def test_it_requires_a_persona_id_for_persona_user_scope(api):
    response = api.post(URL, {"scope": "persona_user", "key": "k", "value": "v"}, format="json")

    assert_error(response, 400, "persona_id")
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_an_unknown_persona(api):
    response = api.post(
        URL,
        {"scope": "persona_user", "persona_id": str(uuid.uuid4()), "key": "k", "value": "v"},
        format="json",
    )

    assert_error(response, 400, "persona_id")
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_a_persona_id_with_user_scope(api, persona):
    response = api.post(
        URL, {"persona_id": str(persona.id), "key": "k", "value": "v"}, format="json"
    )

    assert_error(response, 400, "persona_id")
    assert stored_rows() == NOTHING_STORED


def test_it_stores_category_and_source_channel(api):
    channel = uuid.uuid4()

    response = api.post(
        URL,
        {"key": "k", "value": "v", "category": "work", "source_channel_id": str(channel)},
        format="json",
    )

    assert response.status_code == 201, response.json()
    assert response.json()["category"] == "work"
    assert response.json()["source_channel_id"] == str(channel)
    memory = Memory.objects.get(id=response.json()["id"])
    assert (memory.category, memory.source_channel_id) == ("work", channel)


@pytest.mark.parametrize(
    ("sent", "stored"),
    [(7, 1.0), (-3, 0.0), (1.5, 1.0), (-0.01, 0.0), (0, 0.0), (1, 1.0), (0.25, 0.25)],
)
@pytest.mark.parametrize("field", ["importance", "confidence"])
def test_it_clamps_importance_and_confidence_on_create(api, field, sent, stored):
    response = api.post(URL, {"key": "k", "value": "v", field: sent}, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()[field] == stored
    assert getattr(Memory.objects.get(id=response.json()["id"]), field) == stored


@pytest.mark.parametrize("bad", [True, False, "high", "NaN", "Infinity", "-inf", None, [], {}])
@pytest.mark.parametrize("field", ["importance", "confidence"])
def test_it_rejects_a_non_number_for_importance_and_confidence(api, field, bad):
    response = api.post(URL, {"key": "k", "value": "v", field: bad}, format="json")

    assert_error(response, 400, field)
    assert stored_rows() == NOTHING_STORED


@pytest.mark.parametrize("literal", ["1e999", "-1e999"])
def test_it_rejects_an_overflowing_number_literal(api, literal):
    body = '{"key": "k", "value": "v", "importance": ' + literal + "}"

    response = api.post(URL, body, content_type="application/json")

    assert_error(response, 400, "importance")
    assert stored_rows() == NOTHING_STORED


def test_it_trims_key_and_value(api):
    response = api.post(URL, {"key": "  language ", "value": " Go\n"}, format="json")

    assert response.status_code == 201, response.json()
    memory = Memory.objects.get(id=response.json()["id"])
    assert (memory.key, memory.value) == ("language", "Go")
