"""A body sent with Transfer-Encoding: chunked, on the servers themselves (issue 42): gunicorn
alone de-chunks it, so the import reads it and broken framing is the client's JSON 400;
Django's development server (manage.py runserver) cannot, so every API path refuses it with
411 and closes the connection, writing nothing. Through nginx: tests/test_slow_clients.py."""

import json
import socket
import subprocess
import sys

import pytest
from rest_framework.authtoken.models import Token

from memories.models import Memory
from tests.config.test_gunicorn import Gunicorn, server_environment
from tests.conftest import make_user
from tests.raw_http import read_head, wait_listening
from tests.topology import REPO, free_port

LINE = b'{"key": "city", "value": "Lives in Lisbon"}\n'


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


WELL_FORMED = chunk(LINE) + b"0\r\n\r\n"
# Framing gunicorn refuses as it de-chunks, each sent whole (the client does not go away).
MALFORMED = {
    "chunk-size": b"zz\r\n" + LINE + b"\r\n0\r\n\r\n",
    "chunk-extension": b'%x;a="\r\n' % len(LINE) + LINE + b"\r\n0\r\n\r\n",
    "chunk-terminator": b"%x\r\n" % len(LINE) + LINE + b"XX0\r\n\r\n",
    "trailer": chunk(LINE) + b"0\r\nnot a header\r\n\r\n",
}


class Runserver:
    """`manage.py runserver`, as a developer runs it, on the test database."""

    def __init__(self, log) -> None:
        self.port = free_port()
        environment = server_environment(f"test-runserver-{self.port}")
        self.log = log
        command = [sys.executable, "manage.py", "runserver", "--noreload"]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                [*command, f"127.0.0.1:{self.port}"],
                cwd=REPO,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait(self) -> None:
        wait_listening(self.process, self.port, self.log)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def token(transactional_db) -> str:
    return Token.objects.create(user=make_user("owner")).key


@pytest.fixture
def runserver(transactional_db, tmp_path):
    server = Runserver(tmp_path / "runserver.log")
    server.wait()
    yield server
    server.stop()


@pytest.fixture
def gunicorn(transactional_db, tmp_path):
    server = Gunicorn(tmp_path / "gunicorn.log")
    server.connect().close()  # wait until it answers
    yield server
    server.stop()


def send_chunked(port: int, path: str, token: str, body: bytes, content_type: str):
    """The status, headers and JSON body of the answer, and all that came after it before the
    server closed the connection, if it said it would (the client sends nothing more)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
        f"Content-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode() + body)
        reader = sock.makefile("rb")
        status, headers = read_head(reader)
        if headers.get("transfer-encoding") == "chunked":
            data = b""
            while size := int(reader.readline().strip(), 16):
                data += reader.read(size)
                reader.readline()
            reader.readline()
        elif "content-length" in headers:
            data = reader.read(int(headers["content-length"]))
        else:  # the answer ends where the connection does
            data = reader.readline()
        # What came after, until the server closed (only when it said it would).
        rest = reader.read() if headers.get("connection") == "close" else None
    return status, headers, json.loads(data), rest


PATHS = [
    ("/api/memories/import", "application/x-ndjson"),
    ("/api/memories", "application/json"),
]


@pytest.mark.parametrize(("path", "content_type"), PATHS, ids=["import", "json"])
def test_runserver_refuses_a_chunked_body_with_411_and_closes(runserver, token, path, content_type):
    body = chunk(b'{"key": "city", "value": "Lives in Lisbon"}') + b"0\r\n\r\n"
    status, headers, answer, rest = send_chunked(
        runserver.port,
        path,
        token,
        body if content_type.endswith("json") else WELL_FORMED,
        content_type,
    )

    assert status == 411, answer
    assert answer["code"] == "length_required" and "body" in answer["fields"]
    assert headers["connection"] == "close"
    assert rest == b""  # the chunks were not read as another request
    assert not Memory.objects.exists()


def test_gunicorn_imports_a_chunked_body(gunicorn, token):
    status, _, answer, _ = send_chunked(
        gunicorn.port, "/api/memories/import", token, WELL_FORMED, "application/x-ndjson"
    )

    assert (status, answer["created"]) == (200, 1), answer
    assert Memory.objects.get().value == "Lives in Lisbon"


@pytest.mark.parametrize("framing", MALFORMED)
@pytest.mark.parametrize(("path", "content_type"), PATHS, ids=["import", "json"])
def test_gunicorn_answers_malformed_chunked_framing_with_a_json_400(
    gunicorn, token, framing, path, content_type
):
    status, headers, answer, _ = send_chunked(
        gunicorn.port, path, token, MALFORMED[framing], content_type
    )

    assert status == 400, answer
    assert answer["code"] == "malformed_body", answer
    assert list(answer["fields"]) == ["body"]
    assert headers["connection"] == "close"  # the rest of the stream cannot be read
    assert not Memory.objects.exists()
    log = gunicorn.log.read_text()
    assert "Traceback" not in log and '"status": 500' not in log, log
