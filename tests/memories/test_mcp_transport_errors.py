"""What the MCP HTTP transport answers for bodies it cannot take: JSON-RPC errors with a 4xx,
never a 500, and a size limit enforced while the body is read (not after reading it whole).
A real uvicorn server on 127.0.0.1; a normal call still works after each refusal."""

import anyio
import httpx
import pytest
from django.test import override_settings
from mcp import types

from memories.accounts.keys import api_key_create
from memories.mcp_server import _BodyTooLarge, _read_body
from memories.models import Memory
from tests.memories.mcp_support import call, http_server, over_http, result_body

pytestmark = pytest.mark.usefixtures("transactional_db", "openai_embedder")

BODY_LIMIT = 64 * 1024


@pytest.fixture
def headers():
    _, raw_key = api_key_create(name="chat backend", scopes=["read", "write"])
    return {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {raw_key}",
        "X-User-Id": "ext-alice",
    }


@pytest.fixture
def mcp_url():
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=BODY_LIMIT), http_server() as url:
        yield url


def tools_call(id_json: str, query: str = '"coffee"') -> bytes:
    params = '{"name": "memory_recall", "arguments": {"query": ' + query + "}}"
    message = '{"jsonrpc": "2.0", "id": ' + id_json + ', "method": "tools/call", "params": '
    return (message + params + "}").encode()


def assert_json_rpc_error(response: httpx.Response, status: int, code: int, words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None, body
    assert body["error"]["code"] == code, body
    assert words in body["error"]["message"], body


def assert_still_answers(url: str, headers: dict) -> None:
    save = call("memory_save", {"key": "k", "value": "v", "confidence": 1})
    result = over_http(url, headers, save)
    assert not result.isError, result_body(result)
    assert Memory.objects.filter(key="k").count() == 1


@pytest.mark.parametrize(
    "body",
    [b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\xff\xfe"}}', b"\xc3("],
    ids=["invalid-utf8-in-a-string", "truncated-sequence"],
)
def test_a_body_that_is_not_utf8_is_a_parse_error(mcp_url, headers, body):
    response = httpx.post(mcp_url, content=body, headers=headers)

    assert_json_rpc_error(response, 400, types.PARSE_ERROR, "not UTF-8")
    assert_still_answers(mcp_url, headers)


def test_an_integer_id_past_the_digit_limit_is_a_parse_error(mcp_url, headers):
    response = httpx.post(mcp_url, content=tools_call("9" * 4400), headers=headers)

    assert_json_rpc_error(response, 400, types.PARSE_ERROR, "number is too long")
    assert_still_answers(mcp_url, headers)


@pytest.mark.parametrize(
    "body",
    [tools_call(r'"\ud800"'), tools_call("7", r'"caf\udc00e"')],
    ids=["as-the-id", "in-an-argument"],
)
def test_a_lone_surrogate_is_an_invalid_request(mcp_url, headers, body):
    response = httpx.post(mcp_url, content=body, headers=headers)

    assert_json_rpc_error(response, 400, types.INVALID_REQUEST, "lone surrogate")
    assert_still_answers(mcp_url, headers)


def test_a_long_integer_id_within_the_limit_is_answered(mcp_url, headers):
    response = httpx.post(
        mcp_url,
        content=b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % (b"9" * 4000),
        headers=headers,
    )

    # Stateless servers answer a ping before initialize; the id comes back as it was sent.
    assert response.status_code == 200, response.text
    assert response.json()["id"] == int("9" * 4000)


def test_a_declared_length_over_the_limit_is_413_and_closes_the_connection(mcp_url, headers):
    body = tools_call("1", '"' + "x" * BODY_LIMIT + '"')

    response = httpx.post(mcp_url, content=body, headers=headers)

    assert_json_rpc_error(response, 413, types.INVALID_REQUEST, f"limit of {BODY_LIMIT} bytes")
    assert response.headers["connection"] == "close"
    assert_still_answers(mcp_url, headers)


def test_a_chunked_body_over_the_limit_is_413(mcp_url, headers):
    def chunks():
        yield b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
        for _ in range(8):
            yield b"x" * (BODY_LIMIT // 4)
        yield b'"}}'

    try:
        response = httpx.post(mcp_url, content=chunks(), headers=headers)
    except (httpx.WriteError, httpx.RemoteProtocolError):
        pytest.fail("the server closed the connection before answering")

    assert "content-length" not in response.request.headers  # it was sent chunked
    assert_json_rpc_error(response, 413, types.INVALID_REQUEST, "larger than the limit")
    assert_still_answers(mcp_url, headers)


def test_the_body_stops_being_read_once_past_the_limit():
    """However long the client goes on sending, the reader takes at most the limit plus one
    chunk: the cost of refusing a body is bounded by the limit, not by the body."""
    received = 0

    async def endless_body():
        nonlocal received
        received += 1
        return {"type": "http.request", "body": b"x" * 1000, "more_body": True}

    async def read():
        with pytest.raises(_BodyTooLarge):
            await _read_body(endless_body, 10_000, declared=None)

    anyio.run(read)
    assert received == 11


def test_a_body_within_the_limit_is_read_whole_from_its_chunks():
    parts = [b'{"a": ', b"1", b"}"]

    async def receive():
        body = parts.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(parts)}

    assert anyio.run(_read_body, receive, 100, None) == b'{"a": 1}'
