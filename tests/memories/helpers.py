"""Shared set-up and checks for the memory API tests."""

from memories import services
from memories.models import Memory, MemoryEmbedding, MemoryRevision, Scope, Source, Status, User
from memories.recall.vector_store import get_vector_store


def make_memory(user: User, key: str = "language", value: str = "Go with Gin", **kwargs) -> Memory:
    """An active user-scope memory written through the service (with revision and vector)."""
    kwargs.setdefault("scope", Scope.USER)
    kwargs.setdefault("actor", user)
    if kwargs["scope"] != Scope.PERSONA:
        kwargs.setdefault("user", user)
    return services.memory_create(key=key, value=value, **kwargs)


def make_pending(user: User, key: str = "city", value: str = "Lives in Lisbon", **kwargs) -> Memory:
    """A memory as extraction would propose it: pending_review, source conversation."""
    return make_memory(
        user,
        key=key,
        value=value,
        actor=None,
        status=Status.PENDING_REVIEW,
        source=Source.CONVERSATION,
        **kwargs,
    )


def bulk_memories(user: User, count: int, **kwargs) -> list[Memory]:
    """Many rows without embeddings, for list and pagination tests that never search."""
    return Memory.objects.bulk_create(
        Memory(user=user, key=f"key {i}", value=f"value {i}", **kwargs) for i in range(count)
    )


def stored_rows() -> dict[str, int]:
    return {
        "memories": Memory.objects.count(),
        "revisions": MemoryRevision.objects.count(),
        "embeddings": MemoryEmbedding.objects.count(),
        "vectors": get_vector_store().count(),
    }


NOTHING_STORED = {"memories": 0, "revisions": 0, "embeddings": 0, "vectors": 0}


def assert_error(response, status: int, field: str | None = None) -> dict:
    """A JSON error of the single API shape, naming `field` when given."""
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"code", "detail", "fields"}, body
    assert isinstance(body["detail"], str) and body["detail"], body
    assert isinstance(body["fields"], dict), body
    if field is not None:
        assert field in body["fields"], body
        assert body["fields"][field] and all(isinstance(m, str) for m in body["fields"][field])
    return body


def search_keys(api, query: str, **params) -> list[str]:
    """The keys GET /api/memories/search answers for `query`, best first."""
    response = api.get("/api/memories/search", {"q": query, **params})
    assert response.status_code == 200, response.content[:300]
    return [result["key"] for result in response.json()["data"]]


def api_with_memories(username: str, memories: list[dict]):
    """An API client of a new user who saved `memories` through POST /api/memories."""
    from tests.conftest import client_for, make_user

    api = client_for(make_user(username))
    for memory in memories:
        assert api.post("/api/memories", memory, format="json").status_code == 201
    return api
