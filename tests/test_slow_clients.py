"""Slow clients cannot starve the production set (issue 22): `scripts/serve --production`,
run as an operator runs it (nginx in front of two gunicorn workers of 4 threads, a Celery
worker and beat, on a database of its own on the suite's PostgreSQL and on Redis), while 16
connections send part of a request and stall, 4 add a header byte per second and 4 send a
body a byte per second. Another client's requests all answer within a second meanwhile.
Without the front (FRONT=none, gunicorn alone) the same test fails: the 24 connections hold
all 8 threads and the other client's requests time out.

Also what the front must keep: X-Forwarded-For as Django's client address
(TRUSTED_PROXY_COUNT), Django's JSON 413 and the import's larger limit, static files; and
what it must give: a chunked import read, and the API's JSON error for every request nginx
refuses itself (issue 42).

PostgreSQL only, as `--production` refuses SQLite (marker `topology`; scripts/test runs it
in its PostgreSQL pass and installs nginx first; serve installs it when run as root)."""

import http.client
import json
import os
import secrets
import socket
import statistics
import time
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis
from django.conf import settings

from tests.celery_support import redis_url
from tests.raw_http import read_head
from tests.slow_clients import (
    McpProbe,
    McpStreamClients,
    Probe,
    SlowClients,
    api_key,
    production_environment,
    remove_front_directory,
    serve_production,
    summary,
)
from tests.topology import free_port, get, wait_until

REDIS_URL = redis_url(6)  # broker and cache; a database no other test uses
STALLED = 16
TRICKLING = 4
SLOW_BODIES = 4
ATTACK_SECONDS = 20.0  # longer than nginx's client_header_timeout, so its 408s happen too
# The acceptance criterion of issue 22: every request of the other client answers within a
# second while the slow connections are held. On this shared 2-core machine the requests take
# ~10-60 ms, so the bound is generous; the client gives up after 5 s.
ANSWER_WITHIN_SECONDS = 1.0
PROBE_TIMEOUT_SECONDS = 5.0
# Issue 42: clients holding GET /mcp (a stream, before it was refused), and for how long the
# other client's /healthz and MCP calls are timed meanwhile.
MCP_STREAMS = 50
MCP_STREAMS_SECONDS = 10.0

pytestmark = [
    pytest.mark.topology,
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="scripts/serve --production runs on PostgreSQL + Redis (./scripts/test runs "
        "this in its PostgreSQL pass)",
    ),
]


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    """scripts/serve --production on a database of its own, ready; dropped afterwards."""
    tmp = tmp_path_factory.mktemp("slow-clients")
    suite_url = os.environ["DATABASE_URL"]
    # The suite's own database may not exist yet (pytest-django makes test_<name>).
    admin_url = urlunsplit(urlsplit(suite_url)._replace(path="/postgres"))
    name = f"slow_clients_{os.getpid()}_{secrets.token_hex(4)}"
    broker = redis.Redis.from_url(REDIS_URL)
    broker.flushdb()  # fails loudly (not a skip) when Redis is down: scripts/test starts it
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    service = None
    try:
        env = production_environment(
            database_url=urlunsplit(urlsplit(suite_url)._replace(path=f"/{name}")),
            redis_url=REDIS_URL,
            port=free_port(),
            tmp=tmp,
        )
        env["METRICS_TOKEN"] = secrets.token_urlsafe(16)
        env["METRICS_ALLOWED_NETWORKS"] = "127.0.0.1/32"
        service = serve_production(env, tmp)
        # The banner once the address answers (issue 42: it came before, even on a taken port).
        wait_until(
            lambda: f"Serving on http://127.0.0.1:{env['PORT']}/" in service.log(),
            what="scripts/serve's banner",
            timeout=30,
            alive=[service],
        )
        yield env, api_key(env)
    finally:
        if service is not None:
            service.stop()
            remove_front_directory(env)
            # Shown when a test fails (pytest prints a failing test's output).
            print(f"\n----- scripts/serve (last 150 lines of {service.log_path}) -----")
            print("\n".join(service.log().splitlines()[-150:]))
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        broker.flushdb()
        broker.close()


def test_another_clients_requests_answer_within_a_second_while_24_slow_connections_are_held(
    production,
):
    env, key = production
    port = int(env["PORT"])
    probe = Probe(port, key, timeout=PROBE_TIMEOUT_SECONDS)
    warm_up = probe.run(4, interval=0.1)
    assert all(answer.status in (200, 201) for answer in warm_up), warm_up

    attack = SlowClients(port, stalled=STALLED, trickling=TRICKLING, slow_bodies=SLOW_BODIES)
    attack.start()
    held = []
    try:
        wait_until(
            lambda: attack.open == STALLED + TRICKLING + SLOW_BODIES,
            what="the slow connections to be open",
            timeout=10,
            alive=[],
        )
        answers = probe.run(ATTACK_SECONDS, interval=0.2, during=lambda: held.append(attack.open))
    finally:
        attack.stop()
    print(f"\nwith {STALLED + TRICKLING + SLOW_BODIES} slow connections:", summary(answers))

    # The slow connections were held (re-opened when the front closed them), not refused.
    assert statistics.median(held) >= STALLED + TRICKLING + SLOW_BODIES - 2, held
    late = [a for a in answers if a.status not in (200, 201) or a.seconds > ANSWER_WITHIN_SECONDS]
    assert not late, f"{len(late)} of {len(answers)} late or failed: {late[:10]}"
    assert len(answers) >= 40, summary(answers)


def test_50_clients_asking_for_mcp_streams_leave_healthz_and_mcp_calls_answering_within_a_second(
    production,
):
    """Issue 42: a GET on /mcp opened a stream that never ended and held a gunicorn thread
    through the front; 8 took the set down. Now each is answered 405 at once and its
    connection stays with nginx only."""
    env, key = production
    port = int(env["PORT"])
    probe = McpProbe(port, key, timeout=PROBE_TIMEOUT_SECONDS)
    warm_up = [probe.request() for _ in range(4)]
    assert all(answer.status == 200 for answer in warm_up), warm_up

    streams = McpStreamClients(port, key, MCP_STREAMS).start()
    held, answers = [], []
    try:
        wait_until(
            lambda: streams.open == MCP_STREAMS,
            what="the stream clients' connections to be open",
            timeout=10,
            alive=[],
        )
        deadline = time.monotonic() + MCP_STREAMS_SECONDS
        while time.monotonic() < deadline:
            answers.append(probe.request())
            held.append(streams.open)
            time.sleep(0.2)
    finally:
        streams.stop()
    print(f"\nwith {MCP_STREAMS} clients on GET /mcp:", summary(answers), streams.statuses)

    assert statistics.median(held) >= MCP_STREAMS - 2, held
    assert set(streams.statuses) == {(405, "POST")}, streams.statuses
    late = [a for a in answers if a.status != 200 or a.seconds > ANSWER_WITHIN_SECONDS]
    assert not late, f"{len(late)} of {len(answers)} late or failed: {late[:10]}"
    assert len(answers) >= 20, summary(answers)


def test_the_front_passes_the_clients_address_and_django_trusts_only_the_last_proxy(
    production,
):
    env, _ = production
    port = int(env["PORT"])
    token = {"Authorization": f"Bearer {env['METRICS_TOKEN']}"}
    # METRICS_ALLOWED_NETWORKS is 127.0.0.1: the address the front appends. An address the
    # client claims in X-Forwarded-For is not taken for its own.
    assert get(port, "/metrics", token)[0] == 200
    assert get(port, "/metrics", {**token, "X-Forwarded-For": "127.0.0.1, 10.0.0.9"})[0] == 200
    assert get(port, "/metrics", {**token, "X-Forwarded-For": "10.0.0.9"})[0] == 200


def test_a_client_cannot_claim_https_through_the_front(production):
    env, key = production
    port = int(env["PORT"])
    headers = {"Authorization": f"Bearer {key}", "X-User-Id": "slow-clients-scheme"}
    for key_name, value in (("morning drink", "tea"), ("evening drink", "coffee")):
        body = json.dumps({"key": key_name, "value": value}).encode()
        status, _ = post(
            port, "/api/memories", body, {**headers, "Content-Type": "application/json"}
        )
        assert status == 201
    # No proxy in front of this one (SECURE_PROXY_SSL_HEADER unset): gunicorn would take any
    # of these from the front for the client's scheme, and the links Django builds with it.
    claims = {"X-Forwarded-Proto": "https", "X-Forwarded-Ssl": "on", "X-Forwarded-Protocol": "ssl"}
    for name, value in claims.items():
        status, body, _ = get(port, "/api/memories?page_size=1", {**headers, name: value})
        assert status == 200, body
        assert json.loads(body)["next"].startswith(f"http://127.0.0.1:{port}/"), name


def post(port: int, path: str, body: bytes, headers: dict) -> tuple[int, dict | None]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        is_json = response.getheader("Content-Type", "").startswith("application/json")
        return response.status, json.loads(data) if is_json else None
    finally:
        connection.close()


def test_a_body_over_djangos_limit_gets_djangos_json_413_and_the_import_takes_more(production):
    env, key = production
    port = int(env["PORT"])
    headers = {"Authorization": f"Bearer {key}", "X-User-Id": "slow-clients-limits"}
    limit = 1_048_576  # DATA_UPLOAD_MAX_MEMORY_SIZE's default, which the front reads
    status, body = post(
        port, "/api/memories", b" " * (limit + 1), {**headers, "Content-Type": "application/json"}
    )
    detail = f"The request body is larger than {limit} bytes."
    assert (status, body) == (
        413,
        {"code": "request_too_large", "detail": detail, "fields": {"body": [detail]}},
    )
    # Just within the limit, Django reads it (and finds no JSON object in it).
    status, body = post(
        port, "/api/memories", b" " * limit, {**headers, "Content-Type": "application/json"}
    )
    assert status == 400, body
    # The import takes files up to IMPORT_MAX_BYTES (256 MiB): this one reaches Django,
    # which reads its lines.
    line = json.dumps({"key": "coffee", "value": "Drinks oat milk flat whites"}).encode()
    line += b" " * 8000  # JSON allows the blanks; fewer lines to read
    lines = b"\n".join([line] * (limit // len(line) + 2))
    assert len(lines) > limit
    status, body = post(
        port,
        "/api/memories/import?dry_run=true",
        lines,
        {**headers, "Content-Type": "application/x-ndjson"},
    )
    assert status == 200, body


def test_static_files_come_through_the_front(production):
    env, _ = production
    status, _, headers = get(int(env["PORT"]), "/static/admin/css/base.css")
    assert (status, headers.get("Content-Type", "").split(";")[0]) == (200, "text/css")


def exchange(port: int, raw: bytes) -> tuple[int, dict, bytes]:
    """Send `raw` on a new connection: the status, headers and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        reader = sock.makefile("rb")
        status, headers = read_head(reader)
        return status, headers, reader.read(int(headers["content-length"]))


def test_a_chunked_import_is_read_through_the_front(production):
    env, key = production
    line = json.dumps({"key": "coffee", "value": "Drinks oat milk flat whites"}).encode() + b"\n"
    head = (
        "POST /api/memories/import HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nX-User-Id: slow-clients-chunked\r\n"
        "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    body = b"%x\r\n" % len(line) + line + b"\r\n0\r\n\r\n"

    status, _, answer = exchange(int(env["PORT"]), head.encode() + body)

    assert status == 200, answer
    assert json.loads(answer)["created"] == 1


POST_HEAD = "POST /api/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
# Requests nginx answers itself, and how: each must be the API's JSON error, not its HTML page.
REFUSED_BY_THE_FRONT = {
    "request-line": (b"GARBAGE\r\n\r\n", 400),
    "header": (b"GET /api/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nNo colon\r\n\r\n", 400),
    "chunk-size": (
        f"{POST_HEAD}Transfer-Encoding: chunked\r\n\r\n".encode() + b"zz\r\n{}\r\n0\r\n\r\n",
        400,
    ),
    "transfer-coding": (
        f"{POST_HEAD}Transfer-Encoding: gzip, chunked\r\n\r\n".encode() + b"0\r\n\r\n",
        501,
    ),
    "length-and-chunked": (
        f"{POST_HEAD}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n".encode()
        + b"0\r\n\r\n",
        400,
    ),
    "uri-too-long": (
        b"GET /api/memories?q=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        414,
    ),
    "header-too-large": (
        b"GET /api/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
        400,
    ),
    "method": (b"TRACE /api/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 405),
    "http-version": (b"GET /api/memories HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", 505),
    "body-too-large": (f"{POST_HEAD}Content-Length: 2000000\r\n\r\n".encode(), 413),
}


@pytest.mark.parametrize("refused", REFUSED_BY_THE_FRONT)
def test_every_request_the_front_refuses_gets_the_apis_json_error(production, refused):
    env, _ = production
    raw, expected = REFUSED_BY_THE_FRONT[refused]

    status, headers, body = exchange(int(env["PORT"]), raw)

    assert status == expected, body
    assert headers["content-type"] == "application/json", body
    error = json.loads(body)
    assert set(error) == {"code", "detail", "fields"} and error["detail"], error
