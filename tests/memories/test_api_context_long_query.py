"""POST /api/memories/context and the memory_context tool take a query as long as a message;
recall reads its end (memories/recall/query.py)."""

from memories.models import Memory
from tests.memories.helpers import assert_error, make_memory

URL = "/api/memories/context"
# A long message about something else; the question comes last.
FILLER = (
    "Our team met on Monday to go over the quarterly budget, the office move and the "
    "printer contract, and we agreed to meet again after the auditors have left. "
)
QUESTION = " Anyway, what should I feed my golden retriever Max tonight?"


def long_message(length: int) -> str:
    return (FILLER * (length // len(FILLER) + 1))[: length - len(QUESTION)] + QUESTION


def test_a_query_of_twenty_thousand_characters_is_answered_from_its_end(api, owner):
    pet = make_memory(owner, key="pet", value="Has a golden retriever named Max")
    make_memory(owner, key="job", value="Works as a nurse at the city hospital")
    query = long_message(20_000)
    assert len(query) == 20_000

    response = api.post(URL, {"query": query}, format="json")

    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert body["memories"][0]["id"] == str(pet.id)
    assert "pet: Has a golden retriever named Max" in body["hint"]
    assert Memory.objects.get(id=pet.id).access_count == 1


def test_a_query_as_long_as_a_message_is_accepted(api, owner, settings):
    make_memory(owner, key="pet", value="Has a golden retriever named Max")

    query = long_message(settings.MESSAGE_CONTENT_MAX_LENGTH)
    response = api.post(URL, {"query": query}, format="json")

    assert response.status_code == 200
    assert response.json()["memories"]


def test_a_query_longer_than_a_message_is_refused_naming_query(api, owner, settings):
    query = long_message(settings.MESSAGE_CONTENT_MAX_LENGTH + 1)

    response = api.post(URL, {"query": query}, format="json")

    body = assert_error(response, 400, "query")
    assert str(settings.MESSAGE_CONTENT_MAX_LENGTH) in body["fields"]["query"][0]


def test_the_memory_context_tool_takes_a_long_query_too(api, owner):
    pet = make_memory(owner, key="pet", value="Has a golden retriever named Max")

    response = api.post(
        "/api/tools/memory_context", {"query": long_message(20_000), "top_k": None}, format="json"
    )

    assert response.status_code == 200, response.content[:300]
    assert response.json()["memories"][0]["id"] == str(pet.id)


def test_the_memory_context_tool_refuses_a_query_longer_than_a_message(api, owner, settings):
    query = long_message(settings.MESSAGE_CONTENT_MAX_LENGTH + 1)

    response = api.post("/api/tools/memory_context", {"query": query, "top_k": None}, "json")

    assert_error(response, 400, "query")


def test_search_keeps_its_limit_of_a_thousand_characters(api, owner):
    response = api.get("/api/memories/search", {"q": "dog " * 250 + "x"})

    assert_error(response, 400, "q")
