from memories.models import Memory, MemoryEmbedding
from memories.recall.vector_store import get_vector_store


def test_it_creates_and_lists_a_memory(api, owner):
    response = api.post("/api/memories", {"key": "language", "value": "Go with Gin"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["owner_id"] == str(owner.id)
    listing = api.get("/api/memories").json()
    assert [m["id"] for m in listing["data"]] == [body["id"]]
    memory = Memory.objects.get(id=body["id"])
    assert MemoryEmbedding.objects.get(memory=memory).dimensions == 384
    assert get_vector_store().count() == 1
