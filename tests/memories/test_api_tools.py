"""The AI tools over REST: GET /api/tools and POST /api/tools/{name}."""

import json
import uuid

import pytest
from jsonschema import Draft202012Validator

from memories.api.serializers import (
    ContextRequestSerializer,
    MemoryCreateSerializer,
    SearchParamsSerializer,
)
from memories.models import Memory, MemoryEmbedding, Source, Status
from memories.tools import TOOLS
from tests.conftest import scoped_client
from tests.memories.helpers import assert_error, make_memory

TOOL_NAMES = ["memory_save", "memory_recall", "memory_context", "memory_profile", "memory_forget"]

# What OpenAI's strict mode accepts in a schema (Structured Outputs, "Supported schemas").
# Not among them: minLength/maxLength, default, title, patternProperties, uniqueItems, …
STRICT_KEYWORDS = {
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "$ref",
    "$defs",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
}
STRICT_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
STRICT_FORMATS = {
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
}


def types_of(schema: dict) -> list[str]:
    given = schema.get("type", [])
    return [given] if isinstance(given, str) else list(given)


def strict_mode_problems(schema: dict, path: str = "$") -> list[str]:
    """Every rule of OpenAI's strict mode the schema breaks, walking all of it."""
    problems = [f"{path}: {k} is not supported" for k in schema if k not in STRICT_KEYWORDS]
    types = types_of(schema)
    problems += [f"{path}: type {t} is not supported" for t in types if t not in STRICT_TYPES]
    if "format" in schema and schema["format"] not in STRICT_FORMATS:
        problems.append(f"{path}: format {schema['format']} is not supported")
    if "enum" in schema and "null" in types and None not in schema["enum"]:
        problems.append(f"{path}: a nullable enum must list null")
    if "object" in types:
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: objects need additionalProperties false")
        properties = schema.get("properties", {})
        if sorted(schema.get("required", [])) != sorted(properties):
            problems.append(f"{path}: every property must be listed in required")
        for name, sub in properties.items():
            problems += strict_mode_problems(sub, f"{path}.{name}")
    if "items" in schema:
        problems += strict_mode_problems(schema["items"], f"{path}[]")
    for index, sub in enumerate(schema.get("anyOf", [])):
        problems += strict_mode_problems(sub, f"{path}|{index}")
    return problems


def listed_schemas(api) -> dict[str, dict]:
    return {
        t["function"]["name"]: t["function"]["parameters"]
        for t in api.get("/api/tools").json()["data"]
    }


# --- The list and the schemas ----------------------------------------------------------------


def test_tools_are_listed_in_the_openai_function_calling_format(api):
    response = api.get("/api/tools")

    assert response.status_code == 200
    tools = response.json()["data"]
    assert [t["function"]["name"] for t in tools] == TOOL_NAMES
    for tool in tools:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters", "strict"}
        assert tool["function"]["strict"] is True
        assert tool["function"]["description"]
        parameters = tool["function"]["parameters"]
        Draft202012Validator.check_schema(parameters)
        assert parameters["type"] == "object"


def test_listing_the_tools_queries_nothing_but_the_token(api, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert api.get("/api/tools").status_code == 200


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_schema_keeps_the_rules_of_openai_strict_mode(api, name):
    parameters = listed_schemas(api)[name]

    Draft202012Validator.check_schema(parameters)
    assert parameters["type"] == "object"  # strict mode wants an object at the root
    assert strict_mode_problems(parameters) == []


def test_the_strict_mode_check_finds_what_strict_mode_refuses():
    loose = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 5},
            "kind": {"type": ["string", "null"], "enum": ["a", "b"]},
            "when": {"type": "string", "format": "uri"},
        },
        "required": ["name"],
    }

    assert len(strict_mode_problems(loose)) == 5


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_each_schema_names_exactly_the_arguments_its_validation_takes(name):
    tool = TOOLS[name]
    fields = tool.arguments().fields
    properties = tool.parameters["properties"]

    assert set(properties) == set(fields)
    for field_name, field in fields.items():
        # Optional arguments, and only those, may be null (meaning "the default").
        assert ("null" in types_of(properties[field_name])) == (not field.required), field_name


def test_the_schemas_accept_what_the_endpoints_accept_and_refuse_the_rest(api):
    schemas = listed_schemas(api)
    save = Draft202012Validator(schemas["memory_save"])
    full = {
        "key": "k",
        "value": "v",
        "confidence": 0.9,
        "category": None,
        "importance": None,
        "replace": None,
        "pinned": None,
        "metadata": None,
        "expires_at": None,
    }

    assert save.is_valid({**full, "scope": "project"})
    assert save.is_valid({**full, "scope": None, "expires_at": "2099-01-31T23:59:00Z"})
    assert not save.is_valid({**full, "scope": None, "expires_at": 20990131})
    assert save.is_valid({**full, "scope": None, "metadata": '{"app": "ios"}'})
    assert save.is_valid({**full, "scope": None, "pinned": True})
    assert not save.is_valid({**full, "scope": None, "pinned": "yes"})
    assert save.is_valid({**full, "scope": None})
    assert not save.is_valid({"key": "k", "value": "v"})
    assert not save.is_valid({**full, "scope": None, "confidence": 2})
    assert not save.is_valid({**full, "scope": "session"})
    assert save.is_valid({**full, "scope": None, "replace": False})
    assert not save.is_valid({**full, "scope": None, "replace": "no"})
    recall = Draft202012Validator(schemas["memory_recall"])
    recall_full = {
        "query": "dog",
        "top_k": 3,
        "as_of": "2026-01-15",
        "min_relevance": 0.2,
        "filter": '{"metadata.app": "ios"}',
    }
    assert recall.is_valid(recall_full)
    assert recall.is_valid(
        {"query": "dog", "top_k": None, "as_of": None, "min_relevance": None, "filter": None}
    )
    assert not recall.is_valid({**recall_full, "min_relevance": 1.5})
    assert not recall.is_valid({**recall_full, "colour": "red"})
    forget = Draft202012Validator(schemas["memory_forget"])
    assert forget.is_valid({"memory_id": str(uuid.uuid4())})
    assert not forget.is_valid({})


# --- Methods and names -------------------------------------------------------------------------


def test_an_unknown_tool_is_404(api):
    response = api.post("/api/tools/memory_erase_everything", {}, format="json")

    assert_error(response, 404, "name")


def test_an_unknown_tool_is_404_for_a_key_too(db):
    response = scoped_client("read").post("/api/tools/memory_erase_everything", {}, format="json")

    assert_error(response, 404, "name")


def test_posting_to_the_tool_list_is_a_json_405(api):
    response = api.post("/api/tools", {}, format="json")

    body = assert_error(response, 405)
    assert body["code"] == "method_not_allowed"


def test_getting_a_tool_is_a_json_405(api):
    response = api.get("/api/tools/memory_save")

    body = assert_error(response, 405)
    assert body["code"] == "method_not_allowed"


def test_the_tools_need_authentication(anon_api):
    assert anon_api.get("/api/tools").status_code == 401
    assert_error(anon_api.post("/api/tools/memory_recall", {"query": "x"}, format="json"), 401)


# --- Key scopes --------------------------------------------------------------------------------


def test_a_read_only_key_may_recall_but_not_save_or_forget(db):
    client = scoped_client("read")

    saved = client.post(
        "/api/tools/memory_save", {"key": "k", "value": "v", "confidence": 1}, format="json"
    )
    forgotten = client.post(
        "/api/tools/memory_forget", {"memory_id": str(uuid.uuid4())}, format="json"
    )
    recalled = client.post("/api/tools/memory_recall", {"query": "anything"}, format="json")

    assert assert_error(saved, 403, "scope")["code"] == "missing_scope"
    assert "'write'" in saved.json()["detail"]
    assert_error(forgotten, 403, "scope")
    assert recalled.status_code == 200, recalled.content
    assert Memory.objects.count() == 0


def test_a_write_only_key_may_save_but_not_recall_or_read_the_context(db):
    client = scoped_client("write")

    saved = client.post(
        "/api/tools/memory_save", {"key": "k", "value": "v", "confidence": 1}, format="json"
    )
    recalled = client.post("/api/tools/memory_recall", {"query": "v"}, format="json")
    context = client.post("/api/tools/memory_context", {"query": "v"}, format="json")

    assert saved.status_code == 201, saved.content
    assert saved.json()["memory"]["external_user_id"] == "ext-alice"
    assert "'read'" in assert_error(recalled, 403, "scope")["detail"]
    assert_error(context, 403, "scope")


# --- memory_save -------------------------------------------------------------------------------


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


def test_memory_save_takes_a_key_and_value_alone_with_the_defaults_of_a_create(api, owner):
    saved = api.post(
        "/api/tools/memory_save", {"key": "city", "value": "Lives in Lisbon"}, format="json"
    )
    created = api.post("/api/memories", {"key": "pet", "value": "Has a cat"}, format="json")

    assert saved.status_code == 201, saved.json()
    assert created.status_code == 201, created.json()
    tool_memory = Memory.objects.get(id=saved.json()["memory"]["id"])
    api_memory = Memory.objects.get(id=created.json()["id"])
    defaults = ("confidence", "importance", "category", "scope", "status", "user_id")
    assert [getattr(tool_memory, name) for name in defaults] == [
        getattr(api_memory, name) for name in defaults
    ]
    assert (tool_memory.confidence, tool_memory.user) == (1.0, owner)


# Each tool's REST counterpart, and the counterpart's name of an argument where it differs.
REST_COUNTERPARTS = {
    "memory_save": (MemoryCreateSerializer, {}),
    "memory_recall": (SearchParamsSerializer, {"query": "q"}),
    "memory_context": (ContextRequestSerializer, {}),
}


@pytest.mark.parametrize("name", list(REST_COUNTERPARTS))
def test_a_tool_requires_exactly_what_its_rest_counterpart_requires(name):
    serializer, renamed = REST_COUNTERPARTS[name]
    rest_fields = serializer().fields

    for argument, field in TOOLS[name].arguments().fields.items():
        counterpart = rest_fields[renamed.get(argument, argument)]
        assert field.required == counterpart.required, argument
        if name == "memory_save" and not field.required:
            # A save is a create: the same defaults.
            assert field.default == counterpart.default, argument


def test_memory_save_takes_null_for_an_optional_argument_as_its_default(api, owner):
    response = api.post(
        "/api/tools/memory_save",
        {
            "key": "city",
            "value": "Lives in Lisbon",
            "confidence": 0.7,
            "category": None,
            "importance": None,
            "scope": None,
        },
        format="json",
    )

    assert response.status_code == 201, response.json()
    memory = Memory.objects.get(id=response.json()["memory"]["id"])
    assert (memory.scope, memory.category, memory.importance) == ("user", "", 0.5)
    assert memory.user == owner


def test_memory_save_refuses_null_for_a_required_argument(api):
    response = api.post(
        "/api/tools/memory_save",
        {"key": None, "value": "v", "confidence": 1, "category": None},
        format="json",
    )

    assert_error(response, 400, "key")
    assert Memory.objects.count() == 0


def test_memory_save_takes_the_arguments_string_as_a_model_produced_it(api):
    arguments = json.dumps({"key": "city", "value": "Lives in Porto", "confidence": 1})

    response = api.post(
        "/api/tools/memory_save", json.dumps(arguments), content_type="application/json"
    )

    assert response.status_code == 201
    assert response.json()["memory"]["value"] == "Lives in Porto"


@pytest.mark.parametrize(
    "body, field",
    [
        (json.dumps("{not json"), "body"),
        (json.dumps(json.dumps(["key", "value"])), "non_field_errors"),
        ("null", "non_field_errors"),
        ("[1, 2]", "non_field_errors"),
    ],
)
def test_arguments_that_are_not_an_object_are_400(api, body, field):
    response = api.post("/api/tools/memory_save", body, content_type="application/json")

    assert_error(response, 400, field)
    assert Memory.objects.count() == 0


def test_memory_save_in_project_scope_uses_the_calls_project(api):
    project = api.post("/api/projects", {"name": "p"}, format="json").json()

    response = api.post(
        f"/api/tools/memory_save?project_id={project['id']}",
        {"key": "db", "value": "Uses PostgreSQL", "confidence": 1, "scope": "project"},
        format="json",
    )

    assert response.status_code == 201
    assert response.json()["memory"]["project_id"] == project["id"]


def test_a_context_id_of_someone_else_is_400_naming_it(api, other_api):
    project = other_api.post("/api/projects", {"name": "theirs"}, format="json").json()

    response = api.post(
        f"/api/tools/memory_save?project_id={project['id']}",
        {"key": "db", "value": "Uses PostgreSQL", "confidence": 1, "scope": "project"},
        format="json",
    )

    assert_error(response, 400, "project_id")
    assert Memory.objects.count() == 0


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"value": "v", "confidence": 1}, "key"),
        ({"key": "k", "value": "v", "confidence": "high"}, "confidence"),
        ({"key": "k", "value": "v", "confidence": 1, "scope": "session"}, "scope"),
        ({"key": "k", "value": "v", "confidence": 1, "scope": "project"}, "scope"),
        ({"key": "k", "value": "v", "confidence": 1, "colour": "red"}, "colour"),
        ({"key": "k" * 201, "value": "v", "confidence": 1}, "key"),
    ],
)
def test_memory_save_rejects_bad_arguments_and_writes_nothing(api, arguments, field):
    response = api.post("/api/tools/memory_save", arguments, format="json")

    assert response.status_code == 400
    assert field in response.json()["fields"]
    assert Memory.objects.count() == 0


# --- memory_recall and memory_context ----------------------------------------------------------


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


def test_memory_recall_refuses_a_top_k_out_of_range(api):
    response = api.post("/api/tools/memory_recall", {"query": "dog", "top_k": 51}, format="json")

    assert_error(response, 400, "top_k")


def test_memory_context_gives_the_hint_of_the_context_endpoint(api, owner):
    pet = make_memory(owner, key="pet", value="I have a golden retriever named Max")
    make_memory(owner, key="job", value="Works as a nurse at the city hospital")

    response = api.post(
        "/api/tools/memory_context",
        {"query": "tell me about their dog", "top_k": None},
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"hint", "memories", "profile"}
    assert body["memories"][0]["id"] == str(pet.id)
    assert "pet: I have a golden retriever named Max" in body["hint"]
    endpoint = api.post(
        "/api/memories/context", {"query": "tell me about their dog"}, format="json"
    ).json()
    assert body["hint"] == endpoint["hint"]
    assert [m["id"] for m in body["memories"]] == [m["id"] for m in endpoint["memories"]]
    pet.refresh_from_db()
    assert pet.access_count == 2  # once per hint that held it


# --- memory_forget -----------------------------------------------------------------------------


def test_memory_forget_soft_deletes_one_of_the_callers_memories(api, owner):
    memory = make_memory(owner, key="pet", value="I have a golden retriever named Max")

    response = api.post("/api/tools/memory_forget", {"memory_id": str(memory.id)}, format="json")

    assert response.status_code == 200, response.content
    assert response.json() == {"forgotten": str(memory.id)}
    memory.refresh_from_db()
    assert memory.deleted_at is not None
    assert memory.revisions.order_by("-id").first().action == "delete"
    assert not MemoryEmbedding.objects.filter(memory=memory).exists()
    assert api.get(f"/api/memories/{memory.id}").status_code == 404
    recalled = api.post(
        "/api/tools/memory_recall", {"query": "golden retriever"}, format="json"
    ).json()
    assert recalled["data"] == []


def test_a_forgotten_memory_can_be_restored(api, owner):
    memory = make_memory(owner, key="pet", value="I have a golden retriever named Max")
    api.post("/api/tools/memory_forget", {"memory_id": str(memory.id)}, format="json")

    response = api.post(f"/api/memories/{memory.id}/restore")

    assert response.status_code == 200, response.content
    memory.refresh_from_db()
    assert memory.deleted_at is None and memory.status == Status.ACTIVE


@pytest.mark.parametrize("whose", ["someone else's", "unknown", "already forgotten"])
def test_memory_forget_of_a_memory_not_the_callers_is_404_naming_memory_id(
    api, owner, other, whose
):
    theirs = make_memory(other)
    mine = make_memory(owner)
    mine.deleted_at = mine.created_at
    mine.save(update_fields=["deleted_at"])
    memory_id = {
        "someone else's": theirs.id,
        "unknown": uuid.uuid4(),
        "already forgotten": mine.id,
    }[whose]

    response = api.post("/api/tools/memory_forget", {"memory_id": str(memory_id)}, format="json")

    assert_error(response, 404, "memory_id")
    theirs.refresh_from_db()
    assert theirs.deleted_at is None


@pytest.mark.parametrize("memory_id", ["not-a-uuid", 42, None])
def test_memory_forget_refuses_an_id_that_is_no_uuid(api, memory_id):
    response = api.post("/api/tools/memory_forget", {"memory_id": memory_id}, format="json")

    assert_error(response, 400, "memory_id")
