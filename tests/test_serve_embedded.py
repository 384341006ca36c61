"""`./scripts/serve` is the whole product (issue 24): a fresh server, with no broker, extracts a
quiet conversation by itself (the embedded scheduler's scan, interval and quiet period
shortened by settings), and answers MCP at /mcp on the REST API's address; so does
`./scripts/serve --production` (nginx in front of gunicorn; PostgreSQL pass, nginx needed).

The server runs as a user runs it, on a database of its own (a SQLite file, or a database
made for it on the suite's PostgreSQL), with the model provider's stand-in on 127.0.0.1."""

import http.client
import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis
from django.conf import settings

from tests.celery_support import redis_url
from tests.extraction.helpers import answer, conversation, memory
from tests.fake_openai import FakeOpenAI
from tests.memories.mcp_support import (
    assert_typescript_session_completed,
    calls,
    list_tools,
    over_http,
    over_typescript_sdk,
    result_body,
)
from tests.slow_clients import (
    api_key,
    production_environment,
    remove_front_directory,
    serve_production,
)
from tests.topology import REPO, Service, free_port, is_ready, wait_until

STARTUP_SECONDS = 180
EXTRACTED_WITHIN_SECONDS = 90
PRODUCTION_REDIS_URL = redis_url(4)  # broker and cache; a database no other test uses
IS_POSTGRESQL = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def request(port: int, method: str, path: str, key: str, body=None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {key}", "X-User-Id": "quickstart-user"}
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def own_database(tmp_path) -> tuple[str, Callable[[], None]]:
    """A DATABASE_URL of a new, empty database and what drops it."""
    if not IS_POSTGRESQL:
        return f"sqlite:///{tmp_path / 'memory.sqlite3'}", lambda: None
    suite_url = os.environ["DATABASE_URL"]
    admin_url = urlunsplit(urlsplit(suite_url)._replace(path="/postgres"))
    name = f"serve_embedded_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")

    def drop() -> None:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return urlunsplit(urlsplit(suite_url)._replace(path=f"/{name}")), drop


@pytest.fixture(scope="module")
def model():
    """The utility model's stand-in: every conversation is about where the user lives."""
    server = FakeOpenAI().start()
    server.chat_responder = lambda body: answer(memory("home", "Lives in Lisbon"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory, model):
    """`./scripts/serve` on a database of its own, ready; its port, API key and log."""
    tmp = tmp_path_factory.mktemp("serve-embedded")
    database_url, drop = own_database(tmp)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CELERY_", "DATABASE_", "PROMETHEUS_", "METRICS_", "EXTRACTION_"))
        and name not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "CACHE_URL")
        and name not in ("HOST", "PORT", "TRUSTED_PROXY_COUNT", "EMBEDDER")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="true",  # as serve sets it when nothing else does
        DATABASE_URL=database_url,
        HOST="127.0.0.1",
        PORT=str(free_port()),
        LLM_BASE_URL=model.base_url,
        LLM_MODEL="fake-model",
        LLM_API_KEY="k",
        # The scan every second; a conversation is quiet after 0.6 s.
        EXTRACTION_SCAN_INTERVAL_SECONDS="1",
        EXTRACTION_IDLE_MINUTES="0.01",
        PYTHONUNBUFFERED="1",
    )
    service = Service("serve-embedded", ["scripts/serve"], env, tmp)
    try:
        port = int(env["PORT"])
        wait_until(
            lambda: is_ready(port),
            what="/readyz of scripts/serve to answer 200",
            timeout=STARTUP_SECONDS,
            alive=[service],
        )
        done = subprocess.run(
            [sys.executable, "manage.py", "create_api_key", "quickstart", "--scopes", "read,write"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        yield port, done.stdout.strip().splitlines()[-1], service
    finally:
        service.stop()
        print(f"\n----- scripts/serve (last 60 lines of {service.log_path}) -----")
        print("\n".join(service.log().splitlines()[-60:]))
        drop()


def test_a_fresh_server_extracts_a_quiet_conversation_by_itself(served):
    port, key, service = served
    status, topic = request(port, "POST", "/api/topics", key, {})
    assert status == 201, topic

    status, posted = request(
        port,
        "POST",
        f"/api/topics/{topic['id']}/messages",
        key,
        {"messages": conversation(2, "I moved to Lisbon last spring")},
    )

    assert status == 201, posted
    assert posted["extraction"]["status"] == "not_triggered"  # not quiet yet

    def extracted() -> list:
        status, page = request(port, "GET", "/api/memories?status=pending_review", key)
        assert status == 200, page
        return page["data"]

    [proposed] = wait_until(
        extracted,
        what="the scan to extract the conversation",
        timeout=EXTRACTED_WITHIN_SECONDS,
        alive=[service],
    )
    assert (proposed["key"], proposed["value"]) == ("home", "Lives in Lisbon")
    log = service.log()
    assert "embedded worker and scheduler started" in log
    assert "scan-extractions every 1 s" in log


def test_the_embedded_default_is_gunicorn_answering_on_one_kept_alive_connection(served):
    """runserver answered every request after the first on a kept-alive connection 44 ms
    late; gunicorn answers them all on that connection (the latency is in the benchmark)."""
    port, _, _ = served
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    answers = []
    try:
        for path in ("/healthz", "/api/", "/static/review/review.css", "/healthz"):
            connection.request("GET", path)
            response = connection.getresponse()
            client_port = connection.sock.getsockname()[1]
            response.read()
            answers.append((response.status, response.getheader("Server"), client_port))
    finally:
        connection.close()

    assert [status for status, _, _ in answers] == [200, 200, 200, 200]
    assert {server for _, server, _ in answers} == {"gunicorn"}
    assert len({client_port for _, _, client_port in answers}) == 1  # one connection


def test_static_files_of_the_admin_and_the_review_pages_are_served(served):
    port, _, _ = served
    for path in ("/static/admin/css/base.css", "/static/review/review.css"):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read()
        connection.close()

        assert response.status == 200, path
        assert response.getheader("Content-Type").startswith("text/css"), path
        assert body, path


def test_the_banner_comes_once_gunicorn_answers_with_the_login_under_it(served):
    port, _, service = served
    lines = service.log().splitlines()
    banner = lines.index(
        f"Serving on http://127.0.0.1:{port}/ (gunicorn; tasks and the periodic work on "
        "threads of it, no broker; Ctrl-C stops it)"
    )
    listening = next(n for n, line in enumerate(lines) if "Listening at:" in line)
    worker_ready = next(n for n, line in enumerate(lines) if "ready in" in line)

    login = next(n for n, line in enumerate(lines) if line.startswith("Staff login: "))

    assert listening < worker_ready < banner < login
    assert lines[login].startswith("Staff login: username admin  password ")


def test_a_second_serve_on_the_taken_port_says_so_and_stops(served, tmp_path):
    port, _, service = served
    env = {name: value for name, value in os.environ.items() if name != "DEBUG"}
    env.update(HOST="127.0.0.1", PORT=str(port), DATABASE_URL=f"sqlite:///{tmp_path / 'db'}")

    done = subprocess.run(
        ["scripts/serve"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 1
    assert f"127.0.0.1:{port} is taken: another process listens there" in done.stderr
    assert "Serving on" not in done.stdout
    assert not (tmp_path / "db").exists()  # nothing ran: not even the migration
    service.assert_running()


def mcp_save_list_and_recall(url: str, key: str) -> None:
    """initialize, tools/list and tools/call through the MCP SDK's own client."""
    headers = {"Authorization": f"Bearer {key}", "X-User-Id": "mcp-user"}

    tools = over_http(url, headers, list_tools)
    saved, recalled = over_http(
        url,
        headers,
        calls(
            ("memory_save", {"key": "pet", "value": "Has a cat named Miso", "confidence": 0.9}),
            ("memory_recall", {"query": "cat named Miso", "top_k": 3}),
        ),
    )

    assert {"memory_save", "memory_recall", "memory_context"} <= {tool.name for tool in tools}
    memory_id = result_body(saved)["memory"]["id"]
    assert [hit["id"] for hit in result_body(recalled)["data"]] == [memory_id]


def test_mcp_answers_on_the_apis_address(served):
    port, key, _ = served

    mcp_save_list_and_recall(f"http://127.0.0.1:{port}/mcp", key)

    status, body = request(port, "GET", "/api/memories", "not-a-key")
    assert status == 401  # the API beside it is Django's, unchanged


def test_mcp_refuses_a_request_without_credentials_as_the_api_does(served):
    port, _, _ = served
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/mcp", body=b"{}", headers={"Content-Type": "application/json"})
    response = connection.getresponse()

    assert response.status == 401
    assert json.loads(response.read())["code"] == "not_authenticated"
    connection.close()


def assert_no_stream_on_get(port: int, key: str) -> None:
    """A GET on /mcp (the stream a client asks for) is 405 at once, allowing POST."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(
            "GET",
            "/mcp",
            headers={
                "Authorization": f"Bearer {key}",
                "X-User-Id": "mcp-user",
                "Accept": "text/event-stream",
            },
        )
        response = connection.getresponse()
        assert (response.status, response.getheader("Allow")) == (405, "POST")
        assert json.loads(response.read())["error"]["code"] == -32600
    finally:
        connection.close()


def test_a_get_on_mcp_is_405_and_the_typescript_sdk_completes_a_session(served):
    port, key, _ = served

    assert_no_stream_on_get(port, key)
    report = over_typescript_sdk(f"http://127.0.0.1:{port}/mcp", key, "mcp-typescript-user")

    assert_typescript_session_completed(report)


def test_a_body_over_the_limit_is_refused_on_mcp_as_by_its_own_server(served):
    port, key, _ = served
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(
        "POST",
        "/mcp",
        body=b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
        headers={"Authorization": f"Bearer {key}", "X-User-Id": "mcp-user"},
    )
    response = connection.getresponse()

    assert response.status == 413
    assert json.loads(response.read())["error"]["code"] == -32600
    connection.close()


def test_a_stopped_server_says_which_task_it_did_not_finish(served, model):
    """Last of the module: it stops the server (SIGTERM, as scripts/serve's stop sends)."""
    port, key, service = served
    asked, release = threading.Event(), threading.Event()
    model.chat_responder = lambda body: asked.set() or release.wait(600)
    try:
        status, topic = request(port, "POST", "/api/topics", key, {})
        status, posted = request(
            port, "POST", f"/api/topics/{topic['id']}/messages", key, {"messages": conversation(6)}
        )
        assert status == 201, posted
        assert asked.wait(60), "the worker never called the model"

        service.stop()
    finally:
        release.set()

    task_id = posted["extraction"]["task_id"]
    assert (
        f"embedded worker stopped with task extraction.tasks.extract_topic_task[{task_id}] "
        "running" in service.log()
    )


# --- --production ------------------------------------------------------------------------------


@pytest.mark.topology
@pytest.mark.skipif(
    not IS_POSTGRESQL,
    reason="scripts/serve --production runs on PostgreSQL + Redis (./scripts/test runs this in "
    "its PostgreSQL pass)",
)
def test_mcp_answers_on_the_production_address_through_the_front(tmp_path):
    from tests.config.test_serve_script import real_nginx

    real_nginx()  # skipped (or failed in CI) without nginx
    broker = redis.Redis.from_url(PRODUCTION_REDIS_URL)
    broker.flushdb()
    database_url, drop = own_database(tmp_path)
    env = production_environment(
        database_url=database_url, redis_url=PRODUCTION_REDIS_URL, port=free_port(), tmp=tmp_path
    )
    service = None
    try:
        service = serve_production(env, tmp_path)
        port = int(env["PORT"])
        key = api_key(env)

        mcp_save_list_and_recall(f"http://127.0.0.1:{port}/mcp", key)
        assert_no_stream_on_get(port, key)
        report = over_typescript_sdk(f"http://127.0.0.1:{port}/mcp", key, "mcp-typescript-user")
        assert_typescript_session_completed(report)

        # A body over the API's limit is refused by the front, as the MCP guard refuses it.
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request(
            "POST", "/mcp", body=b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1), headers={}
        )
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["error"]["code"] == -32600
        connection.close()
    finally:
        if service is not None:
            service.stop()
            remove_front_directory(env)
            print("\n".join(service.log().splitlines()[-60:]))
        drop()
        broker.flushdb()
        broker.close()
