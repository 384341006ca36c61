"""POST /api/memories/{id}/restore: a soft-deleted memory comes back."""

import pytest

from memories.accounts.tenants import default_tenant
from memories.embeddings.embedders import embed_one
from memories.models import Memory, MemoryEmbedding, MemoryRevision, Persona, Scope
from memories.recall.vector_store import get_vector_store, partition_of
from tests.conftest import key_client, new_key
from tests.memories.helpers import assert_error, make_memory, make_pending, stored_rows


def url(memory) -> str:
    return f"/api/memories/{memory.id}/restore"


def search_ids(client, query: str) -> list[str]:
    response = client.get("/api/memories/search", {"q": query})
    assert response.status_code == 200
    return [hit["id"] for hit in response.json()["data"]]


@pytest.fixture
def deleted(api, owner) -> Memory:
    memory = make_memory(owner, key="pet", value="I have a golden retriever named Max")
    assert api.delete(f"/api/memories/{memory.id}").status_code == 204
    return memory


def test_it_brings_a_deleted_memory_back_active_with_its_vector(api, owner, deleted):
    response = api.post(url(deleted))

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["status"]) == (str(deleted.id), "active")
    assert body["value"] == "I have a golden retriever named Max"
    deleted.refresh_from_db()
    assert deleted.deleted_at is None
    assert MemoryEmbedding.objects.filter(memory=deleted).exists()
    hits = get_vector_store().nearest(
        vector=embed_one(deleted.embedding_text),
        partitions=[partition_of(deleted)],
        k=5,
        status="active",
    )
    assert [hit.memory_id for hit in hits] == [deleted.id]
    assert api.get(f"/api/memories/{deleted.id}").status_code == 200


def test_a_restore_leaves_a_revision(api, owner, deleted):
    api.post(url(deleted))

    revision = MemoryRevision.objects.filter(memory=deleted).latest("id")
    assert (revision.action, revision.actor_id) == ("restore", owner.id)
    assert revision.after["status"] == "active"
    history = api.get(f"/api/memories/{deleted.id}/history").json()["data"]
    assert [entry["action"] for entry in history] == ["restore", "delete", "create"]


def test_recall_finds_a_restored_memory_again(api, deleted):
    question = "What kind of dog does the user own?"
    assert str(deleted.id) not in search_ids(api, question)

    api.post(url(deleted))

    assert search_ids(api, question)[0] == str(deleted.id)
    assert api.get("/api/memories/count").json() == {"active": 1, "pending": 0}


def test_a_deleted_pending_memory_comes_back_active(api, owner):
    pending = make_pending(owner)
    api.delete(f"/api/memories/{pending.id}")

    response = api.post(url(pending))

    assert response.json()["status"] == "active"
    revision = MemoryRevision.objects.filter(memory=pending).latest("id")
    assert (revision.before["status"], revision.after["status"]) == ("pending_review", "active")


def test_restoring_twice_restores_once(api, deleted):
    assert api.post(url(deleted)).status_code == 200
    rows = stored_rows()

    assert_error(api.post(url(deleted)), 404, "id")

    assert stored_rows() == rows
    assert MemoryRevision.objects.filter(memory=deleted, action="restore").count() == 1


def test_restoring_an_active_memory_answers_404_naming_the_id(api, owner):
    memory = make_memory(owner)
    rows = stored_rows()

    assert_error(api.post(url(memory)), 404, "id")

    assert stored_rows() == rows


def test_restoring_another_users_deleted_memory_answers_404(other_api, staff_api, deleted):
    before = Memory.objects.values().get(id=deleted.id)

    for client in (other_api, staff_api):
        body = assert_error(client.post(url(deleted)), 404, "id")
        assert "golden retriever" not in str(body)

    assert Memory.objects.values().get(id=deleted.id) == before
    assert not MemoryEmbedding.objects.filter(memory=deleted).exists()


@pytest.mark.parametrize("memory_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_id_answers_404_naming_it(api, memory_id):
    assert_error(api.post(f"/api/memories/{memory_id}/restore"), 404, "id")


def test_persona_memories_are_restored_by_staff_only(api, staff_api, staff):
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    memory = make_memory(staff, scope=Scope.PERSONA, persona=persona, value="Be brief")
    assert staff_api.delete(f"/api/memories/{memory.id}").status_code == 204

    assert_error(api.post(url(memory)), 404, "id")
    response = staff_api.post(url(memory))

    assert response.status_code == 200, response.content
    assert response.json()["owner_id"] == str(persona.id)


def test_it_needs_authentication(anon_api, deleted):
    assert_error(anon_api.post(url(deleted)), 401)


def test_a_key_needs_the_write_scope_to_restore(db):
    writer = key_client(new_key("read", "write"), "ext-alice")
    memory_id = writer.post("/api/memories", {"key": "k", "value": "v"}, format="json").json()["id"]
    assert writer.delete(f"/api/memories/{memory_id}").status_code == 204

    reader = key_client(new_key("read"), "ext-alice")
    assert_error(reader.post(f"/api/memories/{memory_id}/restore"), 403, "scope")
    assert writer.post(f"/api/memories/{memory_id}/restore").status_code == 200
