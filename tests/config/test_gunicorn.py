"""Production serving as docs/operations.md runs it: gunicorn with config/gunicorn.conf.py on the
test database, over real sockets. Workers load the model before they answer, keep client
connections open, keep their database connection between requests, and get a new one when
the database dropped the old."""

import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token

from tests.conftest import make_user
from tests.raw_http import read_head, wait_listening

REPO = Path(__file__).resolve().parents[2]


def database_url(application_name: str) -> str:
    """The test database as a DATABASE_URL for the server process: the URL the suite runs
    on (host, port, socket directory and options as given), naming the test database; on
    PostgreSQL its connections carry application_name, which tells them from those of servers
    that earlier tests stopped (a backend outlives its client by a moment)."""
    if connection.vendor == "sqlite":
        return f"sqlite:///{connection.settings_dict['NAME']}"
    url = urlsplit(os.environ["DATABASE_URL"])
    query = "&".join(filter(None, [url.query, f"application_name={application_name}"]))
    return urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"], query=query))


def server_environment(application_name: str, **variables: str) -> dict[str, str]:
    """The environment of a server process on the test database: this one's, without the
    settings module, DEBUG and a broker (tasks run in process), DEBUG off, its own secret."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "CELERY_BROKER_URL")
    }
    environment.update(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL=database_url(application_name),
        **variables,
    )
    return environment


class Gunicorn:
    def __init__(self, log: Path, **variables: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.application_name = f"test-gunicorn-{self.port}"
        environment = server_environment(self.application_name, **variables)
        self.log = log
        # One worker with one thread: every request below meets the same database connection.
        command = [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py"]
        command += ["--workers", "1", "--threads", "1", "--bind", f"127.0.0.1:{self.port}"]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                command, cwd=REPO, env=environment, stdout=out, stderr=subprocess.STDOUT
            )

    def connect(self) -> http.client.HTTPConnection:
        wait_listening(self.process, self.port, self.log)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def server(transactional_db, tmp_path):
    server = Gunicorn(tmp_path / "gunicorn.log")
    yield server
    server.stop()


@pytest.fixture
def server_with_broker(transactional_db, tmp_path):
    """Served as beside Celery workers: with a broker configured the process starts no
    embedded worker, so every connection it holds to the database is a request thread's.
    Nothing here sends a task, so the broker is never reached."""
    server = Gunicorn(tmp_path / "gunicorn.log", CELERY_BROKER_URL="redis://127.0.0.1:6379/15")
    yield server
    server.stop()


@pytest.fixture
def token(transactional_db) -> str:
    return Token.objects.create(user=make_user("owner")).key


def get(connection: http.client.HTTPConnection, path: str, token: str):
    connection.request("GET", path, headers={"Authorization": f"Token {token}"})
    response = connection.getresponse()
    return response, response.read()


def service_backends(server: Gunicorn) -> list[int]:
    """PostgreSQL backends of this server's request threads: its connections (by
    application_name) whose last statement read the memories (the requests here count them).
    Only for a server with a broker (server_with_broker): the embedded worker's thread holds a
    connection of its own for the periodic tasks, which read the same tables at moments of
    their own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
            "AND backend_type = 'client backend' AND query LIKE %s",
            [server.application_name, '%"memories_memory"%'],
        )
        return [row[0] for row in cursor.fetchall()]


def test_a_worker_has_loaded_the_model_before_it_answers(server, token):
    client = server.connect()

    response, body = get(client, "/api/memories/count", token)

    assert response.status == 200, server.log.read_text()
    ready = [line for line in server.log.read_text().splitlines() if "ready in" in line]
    assert len(ready) == 1


def test_a_worker_says_once_which_extractor_runs_and_not_its_key(transactional_db, tmp_path):
    # Nothing listens at the address: saying which model runs must not call it.
    server = Gunicorn(
        tmp_path / "gunicorn.log",
        LLM_BASE_URL="http://127.0.0.1:9/v1",
        LLM_MODEL="gpt-4o-mini",
        LLM_API_KEY="sk-test-secret-never-logged",
    )
    try:
        client = server.connect()
        client.request("GET", "/healthz")
        response = client.getresponse()  # the worker has loaded config/wsgi.py
        response.read()
    finally:
        server.stop()

    log = server.log.read_text()
    said = [line for line in log.splitlines() if "extraction: the " in line]
    assert len(said) == 1, log
    assert "extraction: the LLM gpt-4o-mini at http://127.0.0.1:9/v1" in said[0]
    assert "sk-test-secret-never-logged" not in log


def test_a_get_on_mcp_is_405_at_once_and_leaves_the_one_thread_free(server, token):
    """One worker of one thread: a GET stream on /mcp would hold it, and the next request,
    on another connection, would wait for as long as the stream's client stayed."""
    held = server.connect()
    held.request(
        "GET", "/mcp", headers={"Authorization": f"Token {token}", "Accept": "text/event-stream"}
    )
    response = held.getresponse()
    assert (response.status, response.getheader("Allow")) == (405, "POST")
    response.read()

    other = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    answer, body = get(other, "/healthz", token)

    assert answer.status == 200, body
    held.close()
    other.close()


def test_answers_keep_the_client_connection_open(server, token):
    client = server.connect()

    for _ in range(3):
        response, body = get(client, "/api/memories/search?q=cat", token)
        assert response.status == 200, body
        assert response.getheader("Connection", "").lower() == "keep-alive"


def test_requests_reuse_one_database_connection(server_with_broker, token):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL: connections are visible in pg_stat_activity")
    client = server_with_broker.connect()

    get(client, "/api/memories/count", token)
    first = service_backends(server_with_broker)
    for _ in range(3):
        get(client, "/api/memories/count", token)

    assert len(first) == 1
    assert service_backends(server_with_broker) == first


def test_a_request_succeeds_after_the_database_dropped_the_connection(server_with_broker, token):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL: a server can end a client's connection")
    client = server_with_broker.connect()
    get(client, "/api/memories/count", token)
    (dropped,) = service_backends(server_with_broker)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [dropped])

    response, body = get(client, "/api/memories/count", token)

    assert response.status == 200, body
    assert dropped not in service_backends(server_with_broker)


def post_raw(sock: socket.socket, path: str, body: bytes, headers: dict[str, str]) -> None:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str]]:
    """The status and headers of one answer on a raw connection, its body read and dropped."""
    reader = sock.makefile("rb")
    status, headers = read_head(reader)
    reader.read(int(headers["content-length"]))
    return status, headers


def closed_by_server(sock: socket.socket) -> bool:
    # Generous: on a loaded machine the worker may take seconds to be scheduled at all.
    sock.settimeout(30)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.parametrize(
    ("headers", "size", "status"),
    [
        ({}, 200_000, 401),  # refused before the body is parsed
        ({"Authorization": "Token {token}"}, 2_000_000, 413),  # over the body limit
    ],
    ids=["unauthenticated", "too-large"],
)
def test_an_answer_that_leaves_the_body_unread_says_the_connection_closes(
    server, token, headers, size, status
):
    server.connect().close()  # wait until it answers
    headers = {name: value.format(token=token) for name, value in headers.items()}
    headers["Content-Type"] = "application/json"
    body = b'{"key": "k", "value": "' + b"x" * size + b'"}'

    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        post_raw(sock, "/api/memories", body, headers)
        answered, answer_headers = read_answer(sock)

        assert answered == status
        assert answer_headers["connection"] == "close"
        assert closed_by_server(sock)


def test_an_answer_that_read_the_body_keeps_the_connection(server, token):
    server.connect().close()
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}

    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        post_raw(sock, "/api/memories", b'{"key": "k", "value": "' + b"x" * 3000 + b'"}', headers)
        first, first_headers = read_answer(sock)
        post_raw(sock, "/api/memories", b'{"key": "j", "value": "v"}', headers)
        second, _ = read_answer(sock)

    assert (first, second) == (201, 201)
    assert first_headers["connection"] == "keep-alive"


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/api/memories/import", "application/x-ndjson"), ("/api/memories", "application/json")],
    ids=["import", "json"],
)
def test_a_chunked_body_the_client_abandons_is_a_400_not_a_server_error(
    server, token, path, content_type
):
    server.connect().close()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
        f"Content-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    first_line = b'{"key": "city", "value": "Lives in Lisbon"}\n'

    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head.encode() + b"%x\r\n" % len(first_line) + first_line + b"\r\n")
        sock.sendall(b"400\r\n" + b"x" * 10)  # a chunk cut short, then the client is gone
        sock.shutdown(socket.SHUT_WR)
        closed_by_server(sock)
    # The log line of that request, once gunicorn has answered it.
    deadline = time.monotonic() + 30
    while f'"path": "{path}"' not in server.log.read_text():
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.05)

    log = server.log.read_text()
    assert f'"message": "POST {path} 400' in log, log
    assert '"status": 500' not in log and "Traceback" not in log, log


def test_a_worker_freezes_what_it_loaded_before_it_answers():
    import gc
    import logging
    import runpy
    from types import SimpleNamespace

    hooks = runpy.run_path(str(REPO / "config" / "gunicorn.conf.py"))
    worker = SimpleNamespace(pid=os.getpid(), log=logging.getLogger("test.gunicorn"))
    gc.unfreeze()
    try:
        hooks["post_worker_init"](worker)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
