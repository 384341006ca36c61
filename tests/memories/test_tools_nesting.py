"""Deeply nested JSON sent to the AI tools, over REST (POST /api/tools/{name}) and MCP: a 400
or a tool error naming the body or the argument, never a server error or a crash."""

import json

import httpx
import pytest

from memories.accounts.keys import api_key_create
from memories.models import Memory
from tests.conftest import make_user
from tests.memories.helpers import assert_error
from tests.memories.mcp_support import call, http_server, over_http, over_stdio, tool_error

PLAIN_VALUE = "not a list or object"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- REST ----------------------------------------------------------------------------------------


def test_a_string_body_holding_deeply_nested_json_is_400_naming_body(api):
    body = json.dumps(nested(3000))  # a JSON string, as a model hands over its arguments

    response = api.post("/api/tools/memory_recall", body, content_type="application/json")

    error = assert_error(response, 400, "body")
    assert "nested too deeply" in error["detail"]


@pytest.mark.parametrize("as_string", [False, True], ids=["object", "string"])
@pytest.mark.parametrize(
    ("tool", "arguments", "argument"),
    [
        ("memory_save", '{"key": "k", "value": "v", "confidence": 1, "scope": %s}', "scope"),
        ("memory_recall", '{"query": "dog", "top_k": %s}', "top_k"),
    ],
)
def test_an_argument_nested_up_to_the_parsers_limit_is_400_naming_it(
    api, tool, arguments, argument, as_string
):
    # Python's parser stops near 1000 levels, less the stack already in use. Just below that,
    # the value parses and a field that str()s it (ChoiceField, IntegerField) would overflow
    # the stack: every depth around the limit is tried.
    for depth in range(850, 1000, 3):
        body = arguments % nested(depth)
        if as_string:
            body = json.dumps(body)

        response = api.post(f"/api/tools/{tool}", body, content_type="application/json")

        error = assert_error(response, 400)
        if "nested too deeply" not in error["detail"]:
            assert PLAIN_VALUE in error["fields"][argument][0], (depth, error)
    assert Memory.objects.count() == 0


def test_a_list_where_a_plain_value_belongs_is_400_naming_the_argument(api):
    response = api.post(
        "/api/tools/memory_save",
        {"key": ["k"], "value": {"text": "v"}, "confidence": 1},
        format="json",
    )

    error = assert_error(response, 400)
    assert set(error["fields"]) == {"key", "value"}
    assert PLAIN_VALUE in error["fields"]["key"][0]
    assert Memory.objects.count() == 0


# --- MCP -----------------------------------------------------------------------------------------


@pytest.mark.usefixtures("transactional_db", "openai_embedder")
def test_an_mcp_http_message_nested_too_deeply_is_a_json_rpc_parse_error():
    _, raw_key = api_key_create(name="chat backend", scopes=["read", "write"])
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {raw_key}",
        "X-User-Id": "ext-alice",
    }
    message = (
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", '
        '"params": {"name": "memory_recall", "arguments": {"query": %s}}}'
    )

    with http_server() as url:
        too_deep = httpx.post(url, content=message % nested(3000), headers=headers)
        result = over_http(url, headers, call("memory_recall", {"query": json.loads(nested(50))}))

    assert too_deep.status_code == 400
    body = too_deep.json()
    assert body["error"]["code"] == -32700 and "nested too deeply" in body["error"]["message"]
    assert PLAIN_VALUE in tool_error(result)["fields"]["query"][0]


@pytest.mark.usefixtures("transactional_db", "openai_embedder")
def test_a_nested_argument_over_mcp_stdio_is_a_tool_error_naming_it():
    make_user("owner")

    result = over_stdio(
        ["--user", "owner"],
        call(
            "memory_save",
            {"key": "k", "value": "v", "confidence": 1, "scope": json.loads(nested(50))},
        ),
    )

    assert PLAIN_VALUE in tool_error(result)["fields"]["scope"][0]
    assert Memory.objects.count() == 0
