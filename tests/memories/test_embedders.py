"""Embedders: the OpenAI-compatible one against the stand-in provider, and EMBEDDER=none."""

from memories.embedders import LocalEmbedder, get_embedder
from memories.models import Memory, MemoryEmbedding
from memories.recall.vector_store import get_vector_store


def test_the_local_embedder_gives_unit_vectors_of_384_dimensions():
    vector = get_embedder().embed(["hello world"])[0]

    assert len(vector) == 384
    assert abs(sum(x * x for x in vector) - 1.0) < 1e-4


def test_writes_are_embedded_through_an_openai_compatible_endpoint(api, openai_embedder):
    response = api.post("/api/memories", {"key": "pet", "value": "Has a cat"}, format="json")

    assert response.status_code == 201
    embedding = MemoryEmbedding.objects.get(memory_id=response.json()["id"])
    assert (embedding.model, embedding.dimensions) == ("fake-embedding", 384)
    calls = [r for r in openai_embedder.requests if r["path"].endswith("/embeddings")]
    assert calls[0]["body"]["input"] == ["pet: Has a cat"]
    assert calls[0]["body"]["model"] == "fake-embedding"


def test_search_works_with_the_openai_embedder(api, openai_embedder):
    api.post("/api/memories", {"key": "pet", "value": "Has a cat called Tom"}, format="json")
    api.post("/api/memories", {"key": "job", "value": "Teaches maths"}, format="json")

    results = api.get("/api/memories/search", {"q": "cat Tom"}).json()["data"]

    assert results[0]["key"] == "pet"


def test_an_embedding_outage_answers_503_and_writes_nothing(api, openai_embedder):
    openai_embedder.embedding_failures.extend([500, 500, 500])

    response = api.post("/api/memories", {"key": "pet", "value": "Has a cat"}, format="json")

    assert response.status_code == 503
    assert response.json()["code"] == "embedder_unavailable"
    assert Memory.objects.count() == 0
    assert get_vector_store().count() == 0


def test_without_an_embedder_writes_store_no_vector(api, no_embedder):
    response = api.post("/api/memories", {"key": "pet", "value": "Has a cat"}, format="json")

    assert response.status_code == 201
    assert not MemoryEmbedding.objects.exists()
    assert api.get("/api/memories/search", {"q": "cat"}).json()["data"][0]["key"] == "pet"


def test_the_local_embedder_uses_the_configured_torch_threads(settings):
    import torch

    before = torch.get_num_threads()
    try:
        settings.EMBEDDING_TORCH_THREADS = 1
        torch.set_num_threads(2)
        LocalEmbedder()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_loading_the_local_model_leaves_its_objects_to_no_garbage_collection():
    import gc

    gc.unfreeze()
    LocalEmbedder()

    assert gc.get_freeze_count() > 100_000
