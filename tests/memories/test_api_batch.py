"""POST /api/memories/batch: many manual creates, all or nothing."""

import pytest

from memories.models import Memory, Status
from tests.memories.helpers import NOTHING_STORED, assert_error, stored_rows


def items(count: int) -> list[dict]:
    return [{"key": f"fact {i}", "value": f"Remembered fact number {i}"} for i in range(count)]


def test_it_creates_every_memory_in_input_order_with_revisions_and_vectors(api, owner):
    body = {"memories": [*items(3), {"key": "k", "value": "v", "importance": 7, "category": "c"}]}

    response = api.post("/api/memories/batch", body, format="json")

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert [m["key"] for m in data] == ["fact 0", "fact 1", "fact 2", "k"]
    assert data[3]["importance"] == 1.0 and data[3]["category"] == "c"
    assert all(m["status"] == Status.ACTIVE and m["source"] == "manual" for m in data)
    assert stored_rows() == {"memories": 4, "revisions": 4, "embeddings": 4, "vectors": 4}
    assert set(Memory.objects.values_list("user", flat=True)) == {owner.id}
    found = api.get("/api/memories/search", {"q": "fact number 2"}).json()["data"]
    assert found and found[0]["key"] == "fact 2"


def test_it_embeds_the_whole_batch_in_one_request(api, openai_embedder):
    openai_embedder.requests.clear()

    response = api.post("/api/memories/batch", {"memories": items(25)}, format="json")

    assert response.status_code == 201, response.content
    embedding_calls = [r for r in openai_embedder.requests if r["path"].endswith("/embeddings")]
    assert len(embedding_calls) == 1
    assert len(embedding_calls[0]["body"]["input"]) == 25


def test_an_invalid_item_names_its_index_and_field_and_nothing_is_written(api):
    body = {
        "memories": [
            *items(2),
            {"key": "", "value": "v"},
            {"key": "k", "value": "v", "importance": "high"},
            "not an object",
        ]
    }

    response = api.post("/api/memories/batch", body, format="json")

    error = assert_error(response, 400)
    assert set(error["fields"]) == {
        "memories[2].key",
        "memories[3].importance",
        "memories[4]",
    }
    assert stored_rows() == NOTHING_STORED


def test_a_scope_rule_of_one_item_refuses_the_whole_batch(api):
    body = {"memories": [*items(2), {"key": "k", "value": "v", "scope": "project"}]}

    assert_error(
        api.post("/api/memories/batch", body, format="json"), 400, "memories[2].project_id"
    )
    assert stored_rows() == NOTHING_STORED


def test_a_persona_item_from_a_non_staff_user_refuses_the_batch(api, world):
    persona = world["persona"]
    before = stored_rows()
    body = {
        "memories": [
            *items(1),
            {"scope": "persona", "persona_id": str(persona.id), "key": "k", "value": "v"},
        ]
    }

    assert_error(api.post("/api/memories/batch", body, format="json"), 403, "memories[1].scope")
    assert stored_rows() == before


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"memories": []},
        {"memories": "x"},
        {"memories": items(501)},
        {"memories": items(1), "x": 1},
    ],
)
def test_a_missing_empty_or_oversized_batch_is_400(api, body):
    error = assert_error(api.post("/api/memories/batch", body, format="json"), 400)

    assert set(error["fields"]) <= {"memories", "x"} and error["fields"]
    assert stored_rows() == NOTHING_STORED
