"""GET, PUT, PATCH and DELETE /api/memories/{id}; access to someone else's memory."""

import pytest

from memories.accounts.tenants import default_tenant
from memories.embeddings.embedders import embed_one
from memories.models import Memory, MemoryEmbedding, MemoryRevision, Persona, Scope
from memories.recall.vector_store import get_vector_store, partition_of
from tests.memories.helpers import assert_error, make_memory, make_pending


def url(memory) -> str:
    return f"/api/memories/{memory.id}"


def nearest_distance(memory: Memory, text: str, status: str = "active") -> float | None:
    """Cosine distance from `text`'s embedding to the memory's stored vector (None: absent)."""
    neighbours = get_vector_store().nearest(
        vector=embed_one(text), partitions=[partition_of(memory)], k=10, status=status
    )
    return next((n.distance for n in neighbours if n.memory_id == memory.id), None)


@pytest.fixture
def memory(owner) -> Memory:
    return make_memory(owner, key="food", value="Loves pizza with pineapple", category="taste")


def test_it_returns_one_memory(api, owner, memory):
    response = api.get(url(memory))

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(memory.id)
    assert body["value"] == "Loves pizza with pineapple"
    assert body["owner_id"] == str(owner.id)


def test_it_answers_404_for_an_unknown_id(api, memory):
    assert_error(api.get("/api/memories/00000000-0000-0000-0000-000000000000"), 404, "id")


@pytest.mark.parametrize("method", ["put", "patch"])
def test_it_edits_every_editable_field(api, memory, method):
    changes = {
        "key": "drink",
        "value": "Prefers green tea",
        "category": "beverage",
        "importance": 0.9,
        "confidence": 0.6,
    }

    response = getattr(api, method)(url(memory), changes, format="json")

    assert response.status_code == 200, response.json()
    assert {name: response.json()[name] for name in changes} == changes
    memory.refresh_from_db()
    assert {name: getattr(memory, name) for name in changes} == changes


def test_patch_changes_only_the_given_fields(api, memory):
    response = api.patch(url(memory), {"importance": 0.8}, format="json")

    assert response.status_code == 200, response.json()
    memory.refresh_from_db()
    assert memory.importance == 0.8
    assert (memory.key, memory.value, memory.category) == (
        "food",
        "Loves pizza with pineapple",
        "taste",
    )


@pytest.mark.parametrize("method", ["put", "patch"])
def test_an_edit_re_computes_the_embedding(api, memory, method):
    old_text = memory.embedding_text
    assert nearest_distance(memory, old_text) < 1e-4

    response = getattr(api, method)(
        url(memory), {"value": "Writes backend services in Rust"}, format="json"
    )

    assert response.status_code == 200, response.json()
    memory.refresh_from_db()
    assert memory.value == "Writes backend services in Rust"
    assert nearest_distance(memory, memory.embedding_text) < 1e-4
    assert nearest_distance(memory, old_text) > 0.1
    assert MemoryEmbedding.objects.filter(memory=memory).count() == 1
    assert get_vector_store().count() == 1


def test_a_key_edit_also_re_computes_the_embedding(api, memory):
    old_text = memory.embedding_text

    api.patch(url(memory), {"key": "favourite programming language"}, format="json")

    memory.refresh_from_db()
    assert nearest_distance(memory, memory.embedding_text) < 1e-4
    assert nearest_distance(memory, old_text) > 0.05


@pytest.mark.parametrize(("sent", "stored"), [(7, 1.0), (-3, 0.0), (1.0001, 1.0), (-1e-9, 0.0)])
@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize("field", ["importance", "confidence"])
def test_it_clamps_importance_and_confidence_on_edit(api, memory, field, method, sent, stored):
    response = getattr(api, method)(url(memory), {field: sent}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()[field] == stored
    memory.refresh_from_db()
    assert getattr(memory, field) == stored


@pytest.mark.parametrize("bad", [True, "high", "NaN", "inf", None, [0.5]])
@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize("field", ["importance", "confidence"])
def test_it_rejects_a_non_number_on_edit(api, memory, field, method, bad):
    response = getattr(api, method)(url(memory), {field: bad}, format="json")

    assert_error(response, 400, field)
    memory.refresh_from_db()
    assert (memory.importance, memory.confidence) == (0.5, 1.0)
    assert MemoryRevision.objects.filter(memory=memory).count() == 1


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("key", ""),
        ("key", "   "),
        ("key", "k" * 201),
        ("value", ""),
        ("value", "v" * 4001),
        ("category", "c" * 101),
        ("improtance", 0.7),
        ("status", "archived"),
    ],
)
def test_it_rejects_a_bad_edit_and_changes_nothing(api, memory, field, bad):
    before = Memory.objects.values().get(id=memory.id)

    response = api.patch(url(memory), {field: bad}, format="json")

    if field == "status":
        # The output shape may be sent back; a changed status must not be applied, though.
        assert response.status_code in (200, 400), response.json()
        if response.status_code == 400:
            assert_error(response, 400, "status")
    else:
        assert_error(response, 400, field)
    assert Memory.objects.values().get(id=memory.id) == before
    assert MemoryRevision.objects.filter(memory=memory).count() == 1
    assert nearest_distance(memory, memory.embedding_text) < 1e-4


def test_an_edit_leaves_a_revision_with_the_values_before(api, owner, memory):
    api.patch(url(memory), {"value": "Hates pineapple on pizza"}, format="json")

    revision = MemoryRevision.objects.filter(memory=memory).latest("id")
    assert revision.action == "edit"
    assert revision.actor_id == owner.id
    assert revision.before["value"] == "Loves pizza with pineapple"
    assert revision.after["value"] == "Hates pineapple on pizza"


def test_it_soft_deletes_a_memory(api, owner, memory):
    kept = make_memory(owner, key="city", value="Lives in Lisbon")
    assert get_vector_store().count() == 2

    response = api.delete(url(memory))

    assert response.status_code == 204
    assert response.content == b""
    memory.refresh_from_db()
    assert memory.deleted_at is not None
    assert (memory.key, memory.value) == ("food", "Loves pizza with pineapple")
    assert not MemoryEmbedding.objects.filter(memory=memory).exists()
    assert MemoryEmbedding.objects.filter(memory=kept).exists()
    assert get_vector_store().count() == 1
    assert nearest_distance(memory, memory.embedding_text) is None
    revision = MemoryRevision.objects.filter(memory=memory).latest("id")
    assert (revision.action, revision.actor_id) == ("delete", owner.id)
    assert revision.before["value"] == "Loves pizza with pineapple"


def test_a_deleted_memory_is_gone_from_the_api(api, owner, memory):
    kept = make_memory(owner, key="city", value="Lives in Lisbon")

    api.delete(url(memory))

    assert_error(api.get(url(memory)), 404, "id")
    assert_error(api.patch(url(memory), {"value": "x"}, format="json"), 404, "id")
    assert_error(api.delete(url(memory)), 404, "id")
    listing = api.get("/api/memories").json()
    assert [m["id"] for m in listing["data"]] == [str(kept.id)]
    assert listing["count"] == 1
    assert api.get("/api/memories/count").json() == {"active": 1, "pending": 0}


def test_a_deleted_pending_memory_leaves_the_pending_count(api, owner):
    pending = make_pending(owner)
    assert api.get("/api/memories/count").json()["pending"] == 1

    assert api.delete(url(pending)).status_code == 204

    assert api.get("/api/memories/count").json()["pending"] == 0
    assert get_vector_store().count() == 0


# --- someone else's memory ----------------------------------------------------------------------


ATTEMPTS = [
    ("get", "", None),
    ("put", "", {"value": "hijacked"}),
    ("patch", "", {"value": "hijacked"}),
    ("delete", "", None),
    ("post", "/approve", None),
    ("post", "/reject", None),
    ("get", "/history", None),
]


@pytest.mark.parametrize(("method", "suffix", "body"), ATTEMPTS)
def test_another_users_memory_answers_404_and_stays_unchanged(
    other_api, owner, method, suffix, body
):
    memory = make_pending(owner, key="secret", value="Owner's secret")
    before = Memory.objects.values().get(id=memory.id)

    response = getattr(other_api, method)(f"{url(memory)}{suffix}", body, format="json")

    assert_error(response, 404, "id")
    assert "Owner's secret" not in response.content.decode()
    assert Memory.objects.values().get(id=memory.id) == before
    assert MemoryRevision.objects.filter(memory=memory).count() == 1
    assert MemoryEmbedding.objects.filter(memory=memory).exists()


@pytest.mark.parametrize(("method", "suffix", "body"), ATTEMPTS)
def test_staff_do_not_reach_a_users_memory_through_the_user_api(
    staff_api, owner, method, suffix, body
):
    memory = make_pending(owner)
    before = Memory.objects.values().get(id=memory.id)

    response = getattr(staff_api, method)(f"{url(memory)}{suffix}", body, format="json")

    assert_error(response, 404, "id")
    assert Memory.objects.values().get(id=memory.id) == before


def test_another_users_memory_is_not_in_the_list(other_api, owner):
    make_memory(owner)

    assert other_api.get("/api/memories").json()["data"] == []


@pytest.mark.parametrize(("method", "body"), [("patch", {"value": "changed"}), ("delete", None)])
def test_a_non_staff_user_cannot_change_a_persona_memory(api, staff, method, body):
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    memory = make_memory(staff, scope=Scope.PERSONA, persona=persona, value="Be brief")
    before = Memory.objects.values().get(id=memory.id)

    response = getattr(api, method)(url(memory), body, format="json")

    assert response.status_code in (403, 404)
    assert_error(response, response.status_code)
    assert Memory.objects.values().get(id=memory.id) == before


def test_staff_can_edit_a_persona_memory(staff_api, staff):
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    memory = make_memory(staff, scope=Scope.PERSONA, persona=persona, value="Be brief")

    response = staff_api.patch(url(memory), {"value": "Be thorough"}, format="json")

    assert response.status_code == 200, response.json()
    memory.refresh_from_db()
    assert memory.value == "Be thorough"


def test_a_user_can_edit_their_persona_user_memory(api, owner):
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    memory = make_memory(owner, scope=Scope.PERSONA_USER, persona=persona)

    response = api.patch(url(memory), {"value": "Prefers Rust"}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["user_id"] == str(owner.id)
    memory.refresh_from_db()
    assert memory.value == "Prefers Rust"
