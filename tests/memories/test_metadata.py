"""Issue 46, item 1: `metadata`, a JSON object of the product's own keys, on create, batch,
PATCH (a JSON merge patch) and PUT (whole), memory_save, import and export, webhook payloads;
its limits answer a 400 naming the path; never used for ranking."""

import json
import os

import pytest

from memories.models import Memory
from memories.representations import MemorySerializer
from tests.memories.helpers import assert_error, make_memory

IMPORT = "/api/memories/import"
NDJSON = "application/x-ndjson"


def save(api, key, value, **fields):
    response = api.post("/api/memories", {"key": key, "value": value, **fields}, format="json")
    assert response.status_code in (200, 201), response.content[:500]
    return response.json()


def test_metadata_is_saved_and_read_back_as_given(api):
    metadata = {"app": "ios", "ticket": {"id": 42, "status": "open"}, "tags": ["vip"], "n": None}

    saved = save(api, "diet", "Is vegetarian", metadata=metadata)

    assert saved["metadata"] == metadata
    assert api.get(f"/api/memories/{saved['id']}").json()["metadata"] == metadata
    assert save(api, "city", "Lives in Porto")["metadata"] == {}


def test_a_batch_saves_each_items_metadata(api):
    response = api.post(
        "/api/memories/batch",
        {
            "memories": [
                {"key": "a", "value": "Fact a", "metadata": {"app": "web"}},
                {"key": "b", "value": "Fact b"},
            ]
        },
        format="json",
    )

    assert response.status_code == 201, response.content[:500]
    assert [item["metadata"] for item in response.json()["data"]] == [
        {"app": "web"},
        {},
    ]


def test_patch_merges_and_put_replaces(api):
    saved = save(api, "diet", "Is vegetarian", metadata={"app": "ios", "ticket": {"id": 1}})
    url = f"/api/memories/{saved['id']}"

    merged = api.patch(
        url,
        {"metadata": {"app": None, "ticket": {"status": "open"}, "locale": "pt"}},
        format="json",
    )
    replaced = api.put(url, {"metadata": {"only": True}}, format="json")

    assert merged.status_code == 200, merged.content[:500]
    assert merged.json()["metadata"] == {"ticket": {"id": 1, "status": "open"}, "locale": "pt"}
    assert replaced.status_code == 200, replaced.content[:500]
    assert replaced.json()["metadata"] == {"only": True}
    history = api.get(f"{url}/history").json()["data"]
    assert history[0]["before"]["metadata"] == {
        "ticket": {"id": 1, "status": "open"},
        "locale": "pt",
    }


def test_saving_a_fact_again_merges_its_metadata_into_the_memory_that_holds_it(api):
    first = save(api, "diet", "Is vegetarian", metadata={"app": "ios", "n": None})

    again = save(api, "diet", "Is vegetarian", metadata={"channel": "chat"})
    same = save(api, "diet", "Is vegetarian", metadata={"app": "ios", "n": None})

    assert again["id"] == first["id"] and again["created"] is False
    assert again["metadata"] == {"app": "ios", "n": None, "channel": "chat"}
    # Saving what it holds again changes nothing: a null is a value here, not a removal.
    assert same["metadata"] == again["metadata"]
    assert len(api.get(f"/api/memories/{first['id']}/history").json()["data"]) == 2


def test_a_batch_item_with_bad_metadata_is_named_by_its_index_and_path(api):
    response = api.post(
        "/api/memories/batch",
        {
            "memories": [
                {"key": "a", "value": "A"},
                {"key": "b", "value": "B", "metadata": {"x.y": 1}},
            ]
        },
        format="json",
    )

    assert_error(response, 400, "memories[1].metadata.x.y")
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "metadata, path",
    [
        ("not an object", "metadata"),
        ({"a.b": 1}, "metadata.a.b"),
        ({"12": 1}, "metadata.12"),
        ({"ok": {'quote"': 1}}, 'metadata.ok.quote"'),
        ({"line\nbreak": 1}, "metadata.line\nbreak"),
        ({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}, "metadata.a.b.c.d.e"),
        ({"big": "x" * 9000}, "metadata"),
    ],
)
def test_metadata_past_its_limits_is_a_400_naming_the_path(api, metadata, path):
    response = api.post(
        "/api/memories", {"key": "k", "value": "v", "metadata": metadata}, format="json"
    )

    body = assert_error(response, 400, path)
    assert body["fields"][path][0]  # says what and where
    assert not Memory.objects.exists()


def test_a_patch_that_would_outgrow_the_limit_is_a_400_and_changes_nothing(api, settings):
    settings.MEMORY_METADATA_MAX_BYTES = 100
    saved = save(api, "k", "v", metadata={"a": "x" * 50})

    response = api.patch(
        f"/api/memories/{saved['id']}", {"metadata": {"b": "y" * 50}}, format="json"
    )

    assert_error(response, 400, "metadata")
    assert Memory.objects.get(id=saved["id"]).metadata == {"a": "x" * 50}


def test_the_memory_save_tool_takes_metadata_as_an_object_or_its_json_text(api):
    as_text = api.post(
        "/api/tools/memory_save",
        {"key": "style", "value": "Short answers", "metadata": '{"app": "ios"}'},
        format="json",
    )
    as_object = api.post(
        "/api/tools/memory_save",
        {"key": "city", "value": "Lives in Porto", "metadata": {"app": "web"}},
        format="json",
    )
    bad = api.post(
        "/api/tools/memory_save",
        {"key": "x", "value": "y", "metadata": "{not json"},
        format="json",
    )

    assert as_text.json()["memory"]["metadata"] == {"app": "ios"}
    assert as_object.json()["memory"]["metadata"] == {"app": "web"}
    assert_error(bad, 400, "metadata")
    schema = next(
        t for t in api.get("/api/tools").json()["data"] if t["function"]["name"] == "memory_save"
    )
    assert schema["function"]["parameters"]["properties"]["metadata"]["type"] == ["string", "null"]


def test_export_and_import_carry_metadata(api, other_api):
    save(api, "diet", "Is vegetarian", metadata={"app": "ios", "ticket": {"id": 7}})
    save(api, "city", "Lives in Porto")
    exported = b"".join(api.get("/api/memories/export").streaming_content).decode()

    response = other_api.post(IMPORT, exported, content_type=NDJSON)

    assert response.status_code == 200, response.content[:500]
    mine = other_api.get("/api/memories").json()["data"]
    assert {m["key"]: m["metadata"] for m in mine} == {
        "diet": {"app": "ios", "ticket": {"id": 7}},
        "city": {},
    }
    again = other_api.post(IMPORT, exported, content_type=NDJSON).json()
    assert again["created"] == 0 and again["updated"] == 0, again


def test_an_import_line_with_bad_metadata_is_refused_naming_it(api):
    line = json.dumps({"key": "k", "value": "v", "metadata": {"a.b": 1}}) + "\n"

    response = api.post(IMPORT, line, content_type=NDJSON)

    assert response.status_code == 200, response.content[:500]
    [error] = response.json()["errors"]
    assert error["line"] == 1 and error["field"] == "metadata" and "a.b" in error["detail"]
    assert not Memory.objects.exists()


def test_webhook_payloads_carry_metadata_as_the_api_shows_it(owner):
    memory = make_memory(owner, key="style", value="Short answers")
    Memory.objects.filter(id=memory.id).update(metadata={"app": "ios"})
    memory.refresh_from_db()

    assert MemorySerializer(memory).data["metadata"] == {"app": "ios"}


def test_metadata_is_never_ranked_on(api):
    """The same memory ranks the same with or without metadata that repeats the query."""
    plain = save(api, "diet", "Is vegetarian")
    before = api.get("/api/memories/search", {"q": "dinner ideas for me"}).json()["data"]
    api.patch(
        f"/api/memories/{plain['id']}",
        {"metadata": {"note": "dinner ideas for me dinner ideas"}},
        format="json",
    )

    after = api.get("/api/memories/search", {"q": "dinner ideas for me"}).json()["data"]

    assert [(m["id"], m["score_parts"]["relevance"]) for m in before] == [
        (m["id"], m["score_parts"]["relevance"]) for m in after
    ]


@pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="SQLite's table of metadata values (PostgreSQL has a GIN index instead)",
)
def test_sqlite_keeps_its_table_of_top_level_metadata_values_in_step(api):
    """Migration 0024's triggers: a later migration that remakes the memory table (SQLite
    does for most column changes) drops them, and this fails until it makes them again."""
    from django.db import connection

    def values(memory_id):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT key, kind, atom FROM memory_metadata_values WHERE memory_id = %s "
                "ORDER BY key",
                [memory_id.replace("-", "")],
            )
            return cursor.fetchall()

    saved = save(api, "k", "v", metadata={"app": "ios", "n": 2, "ok": True, "t": {"x": 1}})
    assert values(saved["id"]) == [
        ("app", "text", "ios"),
        ("n", "integer", 2),
        ("ok", "true", 1),
        ("t", "object", None),
    ]
    api.patch(f"/api/memories/{saved['id']}", {"metadata": {"app": None}}, format="json")
    assert [row[0] for row in values(saved["id"])] == ["n", "ok", "t"]
    Memory.objects.filter(id=saved["id"]).delete()
    assert values(saved["id"]) == []
