"""The AI tools memory_save and memory_recall (SPEC §6)."""

import json

import pytest
from jsonschema import Draft202012Validator

from memories.models import Memory, Source, Status
from tests.memories.helpers import make_memory


def test_tools_are_listed_in_the_openai_function_calling_format(api):
    response = api.get("/api/tools")

    assert response.status_code == 200
    tools = response.json()["data"]
    assert [t["function"]["name"] for t in tools] == ["memory_save", "memory_recall"]
    for tool in tools:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters"}
        parameters = tool["function"]["parameters"]
        Draft202012Validator.check_schema(parameters)
        assert parameters["type"] == "object"
        assert set(parameters["required"]) <= set(parameters["properties"])


def test_the_schemas_accept_what_the_endpoints_accept_and_refuse_the_rest(api):
    schemas = {
        t["function"]["name"]: t["function"]["parameters"]
        for t in api.get("/api/tools").json()["data"]
    }
    save = Draft202012Validator(schemas["memory_save"])

    assert save.is_valid({"key": "k", "value": "v", "confidence": 0.9, "scope": "project"})
    assert not save.is_valid({"key": "k", "value": "v"})
    assert not save.is_valid({"key": "k", "value": "v", "confidence": 2})
    assert Draft202012Validator(schemas["memory_recall"]).is_valid({"query": "dog", "top_k": 3})


def test_memory_save_writes_an_active_tool_memory(api, owner):
    response = api.post(
        "/api/tools/memory_save",
        {"key": "city", "value": "Lives in Lisbon", "confidence": 0.8, "category": "personal"},
        format="json",
    )

    assert response.status_code == 201, response.json()
    memory = Memory.objects.get(id=response.json()["memory"]["id"])
    assert memory.status == Status.ACTIVE
    assert memory.source == Source.TOOL
    assert memory.user == owner
    assert memory.confidence == 0.8
    assert memory.revisions.get().action == "create"


def test_memory_save_takes_the_arguments_string_as_a_model_produced_it(api):
    arguments = json.dumps({"key": "city", "value": "Lives in Porto", "confidence": 1})

    response = api.post(
        "/api/tools/memory_save", json.dumps(arguments), content_type="application/json"
    )

    assert response.status_code == 201
    assert response.json()["memory"]["value"] == "Lives in Porto"


def test_memory_save_in_project_scope_uses_the_calls_project(api):
    project = api.post("/api/projects", {"name": "p"}, format="json").json()

    response = api.post(
        f"/api/tools/memory_save?project_id={project['id']}",
        {"key": "db", "value": "Uses PostgreSQL", "confidence": 1, "scope": "project"},
        format="json",
    )

    assert response.status_code == 201
    assert response.json()["memory"]["project_id"] == project["id"]


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"value": "v", "confidence": 1}, "key"),
        ({"key": "k", "value": "v", "confidence": "high"}, "confidence"),
        ({"key": "k", "value": "v", "confidence": 1, "scope": "session"}, "scope"),
        ({"key": "k", "value": "v", "confidence": 1, "scope": "project"}, "scope"),
        ({"key": "k", "value": "v", "confidence": 1, "colour": "red"}, "colour"),
    ],
)
def test_memory_save_rejects_bad_arguments_and_writes_nothing(api, arguments, field):
    response = api.post("/api/tools/memory_save", arguments, format="json")

    assert response.status_code == 400
    assert field in response.json()["fields"]
    assert Memory.objects.count() == 0


def test_memory_recall_runs_the_same_hybrid_recall(api, owner):
    pet = make_memory(owner, key="pet", value="I have a golden retriever named Max")
    make_memory(owner, key="job", value="Works as a nurse")

    response = api.post(
        "/api/tools/memory_recall", {"query": "which dog", "top_k": 1}, format="json"
    )

    assert response.status_code == 200
    results = response.json()["data"]
    assert [r["id"] for r in results] == [str(pet.id)]
    assert sum(results[0]["score_parts"].values()) == pytest.approx(results[0]["score"])


def test_an_unknown_tool_is_404(api):
    response = api.post("/api/tools/memory_forget", {}, format="json")

    assert response.status_code == 404
    assert "name" in response.json()["fields"]
