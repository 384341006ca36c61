"""The MCP server over streamable HTTP at /mcp: authenticated per request as the REST API,
each call needing the tool's key scope. A real uvicorn server on 127.0.0.1, driven
by the SDK's own HTTP client; the database is then checked through the REST API and rows."""

import httpx
import pytest
from mcp import types
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from memories import services
from memories.accounts.keys import api_key_create, api_key_revoke
from memories.models import Memory, Scope, Source, Status, User
from memories.profiles.sweep import profiles_refresh
from memories.tools import TOOLS
from tests.conftest import client_for, make_user
from tests.memories.helpers import make_memory
from tests.memories.mcp_support import (
    ACCEPT,
    INITIALIZE,
    assert_typescript_session_completed,
    call,
    call_refused,
    calls,
    command_http_server,
    http_server,
    list_tools,
    over_http,
    over_typescript_sdk,
    result_body,
    tool_error,
)

pytestmark = pytest.mark.usefixtures("transactional_db", "openai_embedder")


@pytest.fixture
def mcp_url():
    with http_server() as url:
        yield url


def new_key(*scopes: str):
    key, raw_key = api_key_create(name="chat backend", scopes=scopes)
    return key, raw_key


def key_headers(raw_key: str, external_id: str = "ext-alice") -> dict[str, str]:
    return {"Authorization": f"Bearer {raw_key}", "X-User-Id": external_id}


def token_header(user: User) -> str:
    token, _ = Token.objects.get_or_create(user=user)
    return f"Token {token.key}"


def rest_as(headers: dict[str, str]) -> APIClient:
    client = APIClient()
    client.credentials(**{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()})
    return client


def test_it_lists_the_same_tools_and_schemas_as_the_rest_api(mcp_url):
    _, raw_key = new_key("read")

    tools = over_http(mcp_url, key_headers(raw_key), list_tools)

    listed = rest_as(key_headers(raw_key)).get("/api/tools").json()["data"]
    assert [tool.name for tool in tools] == [t["function"]["name"] for t in listed]
    assert [tool.name for tool in tools] == list(TOOLS)
    for tool, openai in zip(tools, listed, strict=True):
        parameters = openai["function"]["parameters"]
        # The same arguments; MCP requires only those without a default (strict function
        # calling lists every one, null meaning the default).
        assert tool.inputSchema == {**parameters, "required": tool.inputSchema["required"]}
        fields = TOOLS[tool.name].arguments().fields
        assert tool.inputSchema["required"] == [n for n, f in fields.items() if f.required]
        assert tool.description == openai["function"]["description"]
        read_only = {"memory_recall", "memory_context", "memory_profile"}
        assert tool.annotations.readOnlyHint == (tool.name in read_only)


# --- Authentication ----------------------------------------------------------------------------


def test_a_request_without_credentials_is_401(mcp_url):
    response = httpx.post(mcp_url, json=INITIALIZE, headers=ACCEPT)

    assert response.status_code == 401
    body = response.json()
    assert body["code"] == "not_authenticated" and "Bearer" in body["detail"]
    assert response.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("which", ["unknown", "revoked"])
def test_an_unknown_or_revoked_key_is_401(mcp_url, which):
    key, raw_key = new_key("read", "write")
    if which == "revoked":
        assert api_key_revoke(key=key)
    else:
        raw_key += "x"

    response = httpx.post(mcp_url, json=INITIALIZE, headers={**ACCEPT, **key_headers(raw_key)})

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert not User.objects.filter(external_id="ext-alice").exists()


def test_an_unknown_token_is_401(mcp_url):
    headers = {**ACCEPT, "Authorization": "Token 0123456789abcdef"}

    response = httpx.post(mcp_url, json=INITIALIZE, headers=headers)

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_a_key_without_x_user_id_is_400_naming_it(mcp_url):
    _, raw_key = new_key("read", "write")
    headers = {**ACCEPT, "Authorization": f"Bearer {raw_key}"}

    response = httpx.post(mcp_url, json=INITIALIZE, headers=headers)

    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"X-User-Id"}


def test_a_context_id_that_is_not_the_callers_is_400_naming_it(mcp_url):
    _, raw_key = new_key("read", "write")
    project = services.project_create(owner=make_user("other"), name="theirs")

    response = httpx.post(
        f"{mcp_url}?project_id={project.id}",
        json=INITIALIZE,
        headers={**ACCEPT, **key_headers(raw_key)},
    )

    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"project_id"}


# --- Methods and hosts -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_every_method_but_post_is_405_allowing_post_and_opens_no_stream(mcp_url, method):
    _, raw_key = new_key("read")
    headers = {**ACCEPT, **key_headers(raw_key)}

    # A stream would not end: the read timeout fails the test rather than hanging it.
    response = httpx.request(method, mcp_url, headers=headers, timeout=10)

    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == -32600


def test_a_get_is_405_before_credentials_are_looked_at(mcp_url):
    response = httpx.get(mcp_url, headers={"Accept": "text/event-stream"}, timeout=10)

    assert (response.status_code, response.headers["Allow"]) == (405, "POST")


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_host_allowed_hosts_does_not_name_is_the_apis_400(mcp_url, method):
    _, raw_key = new_key("read", "write")
    headers = {**ACCEPT, **key_headers(raw_key), "Host": "evil.example"}

    response = httpx.request(method, mcp_url, json=INITIALIZE, headers=headers, timeout=10)

    assert response.status_code == 400
    detail = "The Host header names a host this service does not serve."
    assert response.json() == {
        "code": "disallowed_host",
        "detail": detail,
        "fields": {"Host": [detail]},
    }
    assert not User.objects.filter(external_id="ext-alice").exists()


def test_the_typescript_sdks_client_completes_a_session_its_get_refused(mcp_url):
    _, raw_key = new_key("read", "write")

    report = over_typescript_sdk(mcp_url, raw_key, "ext-alice")

    assert_typescript_session_completed(report)
    assert Memory.objects.get().user.external_id == "ext-alice"


def test_an_allowed_host_with_its_port_is_served(mcp_url):
    _, raw_key = new_key("read")

    response = httpx.post(
        mcp_url, json=INITIALIZE, headers={**ACCEPT, **key_headers(raw_key), "Host": "localhost:1"}
    )

    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "memory-service"


# --- Tools with a key and X-User-Id ------------------------------------------------------------


def test_a_key_saves_recalls_and_forgets_as_the_rest_api_would(mcp_url):
    _, raw_key = new_key("read", "write")
    headers = key_headers(raw_key, "crm-7")

    saved, recalled, context = over_http(
        mcp_url,
        headers,
        calls(
            (
                "memory_save",
                {"key": "pet", "value": "Has a golden retriever named Max", "confidence": 0.9},
            ),
            ("memory_recall", {"query": "golden retriever", "top_k": 3}),
            ("memory_context", {"query": "golden retriever", "top_k": None}),
        ),
    )

    user = User.objects.get(external_id="crm-7")
    memory = Memory.objects.get()
    assert (memory.user, memory.source, memory.status) == (user, Source.TOOL, Status.ACTIVE)
    assert result_body(saved)["memory"]["id"] == str(memory.id)
    assert result_body(saved)["memory"]["external_user_id"] == "crm-7"
    assert [hit["id"] for hit in result_body(recalled)["data"]] == [str(memory.id)]
    assert "pet: Has a golden retriever named Max" in result_body(context)["hint"]
    listed = rest_as(headers).get("/api/memories").json()["data"]
    assert [item["id"] for item in listed] == [str(memory.id)]

    forgotten = over_http(mcp_url, headers, call("memory_forget", {"memory_id": str(memory.id)}))

    assert result_body(forgotten) == {"forgotten": str(memory.id)}
    memory.refresh_from_db()
    assert memory.deleted_at is not None
    assert memory.revisions.order_by("-id").first().action == "delete"
    assert rest_as(headers).get("/api/memories").json()["data"] == []


def test_reads_never_create_the_end_user_and_the_first_write_does(mcp_url):
    _, raw_key = new_key("read", "write")
    headers = key_headers(raw_key, "crm-new")

    recalled, context = over_http(
        mcp_url,
        headers,
        calls(
            ("memory_recall", {"query": "anything"}),
            ("memory_context", {"query": "anything", "top_k": None}),
        ),
    )

    assert result_body(recalled) == {"data": []}
    assert result_body(context)["memories"] == []
    assert not User.objects.filter(external_id="crm-new").exists()

    saved = over_http(
        mcp_url, headers, call("memory_save", {"key": "pet", "value": "Has a cat", "confidence": 1})
    )

    user = User.objects.get(external_id="crm-new")
    assert result_body(saved)["memory"]["external_user_id"] == "crm-new"
    assert Memory.objects.get().user == user


def test_memory_save_takes_a_key_and_value_alone_with_the_defaults_of_a_create(mcp_url):
    _, raw_key = new_key("read", "write")

    tools = over_http(mcp_url, key_headers(raw_key), list_tools)
    result = over_http(
        mcp_url, key_headers(raw_key), call("memory_save", {"key": "pet", "value": "Has a cat"})
    )

    schema = next(tool.inputSchema for tool in tools if tool.name == "memory_save")
    assert schema["required"] == ["key", "value"]
    memory = Memory.objects.get(id=result_body(result)["memory"]["id"])
    assert (memory.confidence, memory.importance, memory.category, memory.scope) == (
        1.0,
        0.5,
        "",
        Scope.USER,
    )


def test_a_read_only_key_cannot_save_or_forget_but_can_recall(mcp_url):
    _, raw_key = new_key("read")

    saved, forgotten, recalled = over_http(
        mcp_url,
        key_headers(raw_key),
        calls(
            ("memory_save", {"key": "k", "value": "v", "confidence": 1}),
            ("memory_forget", {"memory_id": "0c4f1b5e-8b1d-4a4e-9a39-3f3b8f0a1d2e"}),
            ("memory_recall", {"query": "v"}),
        ),
    )

    error = tool_error(saved)
    assert error["code"] == "missing_scope"
    assert set(error["fields"]) == {"scope"} and "'write'" in error["detail"]
    assert tool_error(forgotten)["code"] == "missing_scope"
    assert result_body(recalled) == {"data": []}
    assert Memory.objects.count() == 0


def test_a_key_cannot_forget_another_users_memory(mcp_url):
    _, raw_key = new_key("read", "write")
    theirs = make_memory(make_user("other"))

    result = over_http(
        mcp_url, key_headers(raw_key), call("memory_forget", {"memory_id": str(theirs.id)})
    )

    error = tool_error(result)
    assert error["code"] == "not_found" and set(error["fields"]) == {"memory_id"}
    theirs.refresh_from_db()
    assert theirs.deleted_at is None


def test_bad_arguments_are_a_tool_error_naming_the_field(mcp_url):
    _, raw_key = new_key("read", "write")

    bad_save, bad_recall = over_http(
        mcp_url,
        key_headers(raw_key),
        calls(
            ("memory_save", {"key": "k", "value": "v", "confidence": 1, "colour": "red"}),
            ("memory_recall", {"query": "dog", "top_k": 0}),
        ),
    )

    assert set(tool_error(bad_save)["fields"]) == {"colour"}
    assert set(tool_error(bad_recall)["fields"]) == {"top_k"}
    assert Memory.objects.count() == 0


def test_an_unknown_tool_is_a_json_rpc_invalid_params_error_naming_it(mcp_url):
    _, raw_key = new_key("read", "write")

    error = over_http(mcp_url, key_headers(raw_key), call_refused("memory_erase_everything", {}))

    assert error.code == types.INVALID_PARAMS == -32602
    assert "memory_erase_everything" in error.message and "memory_save" in error.message
    assert error.data["code"] == "not_found" and set(error.data["fields"]) == {"name"}


def test_a_failing_embedding_provider_is_a_tool_error_and_writes_nothing(mcp_url, openai_embedder):
    _, raw_key = new_key("read", "write")
    openai_embedder.embedding_failures.extend([503] * 3)  # the first try and two retries

    result = over_http(
        mcp_url,
        key_headers(raw_key),
        call("memory_save", {"key": "k", "value": "v", "confidence": 1}),
    )

    assert tool_error(result)["code"] == "embedder_unavailable"
    assert Memory.objects.count() == 0


# --- A user's own token ------------------------------------------------------------------------


def test_a_user_token_acts_as_that_user_with_every_scope(mcp_url):
    owner = make_user("owner")
    token = token_header(owner)

    saved = over_http(
        mcp_url,
        {"Authorization": token},
        call("memory_save", {"key": "city", "value": "Lives in Porto", "confidence": 1}),
    )

    memory = Memory.objects.get()
    assert memory.user == owner
    assert result_body(saved)["memory"]["id"] == str(memory.id)
    listed = client_for(owner).get("/api/memories").json()["data"]
    assert [item["id"] for item in listed] == [str(memory.id)]


def test_the_url_query_gives_the_calls_project(mcp_url):
    owner = make_user("owner")
    project = services.project_create(owner=owner, name="backend")
    token = token_header(owner)

    saved = over_http(
        f"{mcp_url}?project_id={project.id}",
        {"Authorization": token},
        call(
            "memory_save",
            {"key": "db", "value": "Uses PostgreSQL", "confidence": 1, "scope": "project"},
        ),
    )

    assert result_body(saved)["memory"]["project_id"] == str(project.id)
    memory = Memory.objects.get()
    assert (memory.scope, memory.project) == (Scope.PROJECT, project)


# --- The command -------------------------------------------------------------------------------


def test_the_command_serves_streamable_http_at_slash_mcp():
    _, raw_key = new_key("read")

    with command_http_server() as url:
        refused = httpx.post(url, json=INITIALIZE, headers=ACCEPT)
        tools = over_http(url, key_headers(raw_key), list_tools)
        live = httpx.get(url.replace("/mcp", "/healthz"))
        ready = httpx.get(url.replace("/mcp", "/readyz"))

    # A process of its own answers the probes as the API's address does.
    assert live.status_code == 200 and live.json() == {"status": "ok"}
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"] == "ok"
    assert ready.json()["checks"]["embedder"]["status"] == "ok"
    assert ready.headers["Cache-Control"].startswith("max-age=0")
    assert refused.status_code == 401
    assert refused.json()["code"] == "not_authenticated"
    assert [tool.name for tool in tools] == list(TOOLS)


def test_memory_profile_gives_the_profile_and_memory_context_takes_profile(mcp_url):
    _, raw_key = new_key("read", "write")
    headers = key_headers(raw_key, "crm-8")
    over_http(
        mcp_url,
        headers,
        call("memory_save", {"key": "style", "value": "Prefers short answers", "pinned": True}),
    )
    profiles_refresh()  # the periodic task, run here rather than waited for

    profile = over_http(mcp_url, headers, call("memory_profile", {}))
    assert result_body(profile) == rest_as(headers).get("/api/me/profile").json()
    context = over_http(
        mcp_url, headers, call("memory_context", {"query": "What is 7 times 8?", "profile": True})
    )

    assert result_body(profile)["summary"]["text"] == "Prefers short answers."
    assert result_body(context)["profile"]["text"] == "Prefers short answers."
    assert "Profile (" in result_body(context)["hint"]


def test_the_tools_take_metadata_and_a_filter_and_name_a_bad_filters_path(mcp_url):
    _, raw_key = new_key("read", "write")

    saved, good, bad = over_http(
        mcp_url,
        key_headers(raw_key),
        calls(
            ("memory_save", {"key": "diet", "value": "Is vegetarian", "metadata": {"app": "ios"}}),
            ("memory_recall", {"query": "diet", "filter": {"metadata.app": "ios"}}),
            ("memory_recall", {"query": "diet", "filter": {"metadata.app": {"like": 1}}}),
        ),
    )

    assert not saved.isError and result_body(saved)["memory"]["metadata"] == {"app": "ios"}
    assert [m["key"] for m in result_body(good)["data"]] == ["diet"]
    assert set(tool_error(bad)["fields"]) == {"filter.metadata.app.like"}
