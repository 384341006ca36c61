"""Pinned memories (issue 45, item 1): `pinned` on create, batch, PATCH, import and export and
memory_save; every context hint starts with the caller's pinned memories, gate or not, and
does not repeat them; at most MEMORY_PINNED_MAX per user, a 400 naming `pinned` beyond."""

import json

import pytest

from memories.models import Memory
from memories.representations import MemorySerializer
from tests.memories.helpers import assert_error, make_memory

CONTEXT = "/api/memories/context"
IMPORT = "/api/memories/import"
NDJSON = "application/x-ndjson"


def save(api, key, value, **fields):
    response = api.post("/api/memories", {"key": key, "value": value, **fields}, format="json")
    assert response.status_code in (200, 201), response.content[:500]
    return response.json()


def hint_lines(api, query: str) -> list[str]:
    response = api.post(CONTEXT, {"query": query}, format="json")
    assert response.status_code == 200, response.content[:500]
    return [line for line in response.json()["hint"].splitlines() if line.startswith("- ")]


def test_a_memory_is_saved_pinned_and_unpinned_by_an_edit(api):
    saved = save(api, "answer style", "Prefers short, direct answers without emojis", pinned=True)
    assert saved["pinned"] is True
    assert api.get(f"/api/memories/{saved['id']}").json()["pinned"] is True

    response = api.patch(f"/api/memories/{saved['id']}", {"pinned": False}, format="json")

    assert response.status_code == 200, response.content[:500]
    assert response.json()["pinned"] is False
    assert Memory.objects.get(id=saved["id"]).pinned is False
    assert save(api, "city", "Lives in Lisbon")["pinned"] is False


def test_pinned_must_be_a_boolean(api):
    response = api.post("/api/memories", {"key": "k", "value": "v", "pinned": "yes"}, format="json")

    assert_error(response, 400, "pinned")
    assert not Memory.objects.exists()


def test_a_pinned_memory_heads_every_hint_and_is_not_repeated(api):
    save(api, "answer style", "Prefers short, direct answers without emojis", pinned=True)
    save(api, "diet", "Is vegetarian")
    save(api, "allergy", "Allergic to peanuts")

    unrelated = hint_lines(api, "What is 7 times 8?")
    about_food = hint_lines(api, "What should I cook tonight?")
    about_style = hint_lines(api, "How should you answer me?")

    assert len(unrelated) == 1 and "short, direct answers" in unrelated[0]
    assert "short, direct answers" in about_food[0]
    assert any("vegetarian" in line for line in about_food[1:])
    assert sum("short, direct answers" in line for line in about_style) == 1


def test_the_context_answer_lists_the_pinned_memory_first_with_a_zero_score(api):
    pinned = save(api, "answer style", "Prefers short answers", pinned=True)
    save(api, "diet", "Is vegetarian")

    memories = api.post(CONTEXT, {"query": "am I vegetarian?"}, format="json").json()["memories"]

    assert memories[0]["id"] == pinned["id"] and memories[0]["pinned"] is True
    assert memories[0]["score"] == 0 and set(memories[0]["score_parts"].values()) == {0}
    assert [m["pinned"] for m in memories[1:]] == [False] * (len(memories) - 1)


def test_an_unpinned_or_deleted_memory_leaves_the_hint_of_an_unrelated_question(api):
    style = save(api, "answer style", "Prefers short answers", pinned=True)
    language = save(api, "language", "Answers in Portuguese", pinned=True)
    api.patch(f"/api/memories/{style['id']}", {"pinned": False}, format="json")
    api.delete(f"/api/memories/{language['id']}")

    assert hint_lines(api, "What is the capital of Kenya?") == []


def test_pinned_memories_keep_to_their_share_of_the_budget(api, settings):
    settings.MEMORY_HINT_BUDGET_CHARS = 1000
    settings.MEMORY_HINT_PINNED_SHARE = 0.3
    for i in range(6):
        save(api, f"rule {i}", f"Standing rule number {i}: " + "x" * 80, pinned=True)
    save(api, "diet", "Is vegetarian")

    response = api.post(CONTEXT, {"query": "am I vegetarian?"}, format="json").json()

    pinned_lines = [m for m in response["memories"] if m["pinned"]]
    assert 1 <= len(pinned_lines) < 6
    assert (
        sum(len(line) + 1 for line in response["hint"].splitlines()[3:-1][: len(pinned_lines)])
        <= 300
    )
    assert any(m["key"] == "diet" for m in response["memories"])


def test_one_pin_past_the_limit_is_a_400_naming_pinned_and_writes_nothing(api, settings):
    settings.MEMORY_PINNED_MAX = 2
    save(api, "a", "Rule a", pinned=True)
    unpinned = save(api, "b", "Rule b")
    save(api, "c", "Rule c", pinned=True)
    before = Memory.objects.count()

    created = api.post(
        "/api/memories", {"key": "d", "value": "Rule d", "pinned": True}, format="json"
    )
    edited = api.patch(f"/api/memories/{unpinned['id']}", {"pinned": True}, format="json")
    batch = api.post(
        "/api/memories/batch",
        {
            "memories": [
                {"key": "e", "value": "Rule e"},
                {"key": "f", "value": "Rule f", "pinned": True},
            ]
        },
        format="json",
    )

    for response in (created, edited, batch):
        assert_error(response, 400, "pinned")
    assert Memory.objects.count() == before
    assert Memory.objects.get(id=unpinned["id"]).pinned is False


def test_at_the_limit_a_pinned_fact_can_still_change_its_value_and_stays_pinned(api, settings):
    settings.MEMORY_PINNED_MAX = 1
    first = save(api, "answer style", "Prefers short answers", pinned=True)

    replaced = save(api, "answer style", "Prefers detailed answers")

    assert replaced["id"] != first["id"] and replaced["pinned"] is True
    assert replaced["superseded_ids"] == [first["id"]]


def test_saving_a_fact_again_with_pinned_pins_the_memory_that_holds_it(api):
    first = save(api, "diet", "Is vegetarian")

    again = save(api, "diet", "Is vegetarian", pinned=True)
    unpinned_save = save(api, "diet", "Is vegetarian")

    assert again["id"] == first["id"] and again["created"] is False and again["pinned"] is True
    assert unpinned_save["pinned"] is True  # a save never unpins; an edit does


def test_the_memory_save_tool_pins(api):
    response = api.post(
        "/api/tools/memory_save",
        {"key": "answer style", "value": "Prefers short answers", "pinned": True},
        format="json",
    )

    assert response.status_code in (200, 201), response.content[:500]
    assert response.json()["memory"]["pinned"] is True
    schema = next(
        t for t in api.get("/api/tools").json()["data"] if t["function"]["name"] == "memory_save"
    )
    assert schema["function"]["parameters"]["properties"]["pinned"]["type"] == ["boolean", "null"]


def test_export_and_import_carry_pinned(api, other_api):
    save(api, "answer style", "Prefers short answers", pinned=True)
    save(api, "diet", "Is vegetarian")
    exported = b"".join(api.get("/api/memories/export").streaming_content).decode()

    response = other_api.post(IMPORT, exported, content_type=NDJSON)

    assert response.status_code == 200, response.content[:500]
    lines = [json.loads(line) for line in exported.splitlines()]
    assert {line["key"]: line["pinned"] for line in lines} == {"answer style": True, "diet": False}
    mine = other_api.get("/api/memories").json()["data"]
    assert {m["key"]: m["pinned"] for m in mine} == {"answer style": True, "diet": False}


def test_an_import_past_the_pin_limit_is_a_400_naming_pinned(api, settings):
    settings.MEMORY_PINNED_MAX = 1
    lines = "".join(
        json.dumps({"key": f"rule {i}", "value": f"Rule {i}", "pinned": True}) + "\n"
        for i in range(2)
    )

    response = api.post(IMPORT, lines, content_type=NDJSON)

    assert_error(response, 400, "pinned")
    assert not Memory.objects.filter(pinned=True).exists()


def test_webhook_events_carry_pinned_as_the_api_shows_it(owner):
    memory = make_memory(owner, key="style", value="Short answers")
    Memory.objects.filter(id=memory.id).update(pinned=True)
    memory.refresh_from_db()

    assert MemorySerializer(memory).data["pinned"] is True


@pytest.mark.parametrize("value", [None, 1, "true"])
def test_patch_refuses_a_pinned_that_is_not_true_or_false(api, value):
    saved = save(api, "k", "v")

    response = api.patch(f"/api/memories/{saved['id']}", {"pinned": value}, format="json")

    assert_error(response, 400, "pinned")
    assert Memory.objects.get(id=saved["id"]).pinned is False
