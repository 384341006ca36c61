"""Issue 22, point 6: at least 10,000 fuzzed requests to a real server over sockets, in CI's
PostgreSQL pass, and not one server error.

One threaded WSGI server (Django's, as bench/schema_fuzz.py runs it) on the test database,
wrapped in a WSGI middleware that counts every answer the application gives: that count is the
total the test asserts, not what the clients meant to send. Two callers, an end user through an
API key and X-User-Id and a staff user through a token, each get:
- schemathesis' stateful run (sequences chained by the links it infers from the schema),
- schemathesis per operation, valid and invalid data (tests/schema_fuzz.py),
- the odd-byte corpus of tests/fuzz_corpus.py on every GET, POST, PUT and PATCH route.
No answer may be a 5xx; every 4xx from an /api/ route must be the API's JSON error shape; every
schemathesis answer must match the schema. The totals (requests per kind and caller, status
counts, duration) are printed and written to var/fuzz-ci.json for the closing note.

~2.5 minutes on a 2-core machine. MCP (a transport of its own, not this WSGI app) is not
fuzzed here. On SQLite it is skipped: the SQLite pass already runs the bounded schema
conformance test, and the PostgreSQL pass is where NUL bytes and 64-bit overflows reach a
database that refuses them."""

import http.client
import json
import logging
import os
import secrets
import threading
import time
import traceback
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from django.db import connection
from rest_framework.authtoken.models import Token

from memories.accounts.keys import api_key_create
from memories.models import User
from tests.fuzz_corpus import Client, corpus, encode, routes_from_schema
from tests.schema_fuzz import FuzzReport, fuzz, fuzz_stateful

MINIMUM_REQUESTS = 10_000
# Tuned so the whole run stays near 3 minutes on 2 cores while passing the minimum with room.
STATEFUL_SCENARIOS = int(os.environ.get("FUZZ_STATEFUL_SCENARIOS", "250"))
STATEFUL_STEPS = 6
OPERATION_EXAMPLES = int(os.environ.get("FUZZ_OPERATION_EXAMPLES", "10"))
RESULTS = Path(settings.BASE_DIR) / "var" / "fuzz-ci.json"
ERROR_KEYS = {"code", "detail", "fields"}


class CountingApp:
    """WSGI middleware: counts the status of every answer and keeps, for each 5xx, the method,
    path, query and the start of the body the application read."""

    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.statuses: Counter = Counter()
        self.server_errors: list[str] = []

    def __call__(self, environ, start_response):
        tee = _TeeInput(environ["wsgi.input"])
        environ["wsgi.input"] = tee

        def counted_start_response(status, headers, exc_info=None):
            self._count(int(status.split(" ", 1)[0]), environ, tee)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, counted_start_response)
        except Exception:
            self._count(500, environ, tee, traceback.format_exc(limit=8))
            raise

    def _count(self, status: int, environ, tee, trace: str = "") -> None:
        with self.lock:
            self.statuses[status] += 1
            if status >= 500:
                self.server_errors.append(
                    f"{status} {environ['REQUEST_METHOD']} {environ.get('PATH_INFO')!r}"
                    f" query {environ.get('QUERY_STRING', '')[:200]!r}"
                    f" body {bytes(tee.seen[:300])!r}" + (f"\n{trace}" if trace else "")
                )

    def total(self) -> int:
        with self.lock:
            return sum(self.statuses.values())

    def snapshot(self) -> Counter:
        with self.lock:
            return Counter(self.statuses)


class _TeeInput:
    """The request body stream, keeping a copy of the first bytes read from it."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.seen = bytearray()

    def _keep(self, data: bytes) -> bytes:
        if len(self.seen) < 1000:
            self.seen += data[: 1000 - len(self.seen)]
        return data

    def read(self, *args):
        return self._keep(self.stream.read(*args))

    def readline(self, *args):
        return self._keep(self.stream.readline(*args))

    def __getattr__(self, name):
        return getattr(self.stream, name)


class _QuietHandler(WSGIRequestHandler):
    # Without it the answer's last segment waits for the client's delayed ACK (~40 ms a
    # request on a kept-alive connection): a third of the requests in the same time.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass


@contextmanager
def serve(app):
    server = ThreadedWSGIServer(("127.0.0.1", 0), _QuietHandler)
    server.set_app(app)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address
    finally:
        server.shutdown()
        server.server_close()


class ErrorLogs(logging.Handler):
    """Tracebacks of the errors the application logged, to show beside the 5xx they caused."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record) -> None:
        self.records.append(self.format(record))


@contextmanager
def error_logs():
    """Only errors are logged while the fuzz runs (thousands of 4xx lines otherwise), and
    they are kept."""
    handler = ErrorLogs()
    root = logging.getLogger()
    quieted = {name: logging.getLogger(name) for name in ("django.request", "ops.requests")}
    levels = {name: logger.level for name, logger in quieted.items()}
    for logger in quieted.values():
        logger.setLevel(logging.ERROR)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        for name, logger in quieted.items():
            logger.setLevel(levels[name])


def callers() -> dict[str, dict[str, str]]:
    """The end user of a read-write API key and a staff user with a token. Random external id
    and username: POST /api/me/erase takes either as its confirmation, so generated data
    cannot erase the caller in the middle of the run."""
    _, raw_key = api_key_create(name="fuzz", scopes=("read", "write"))
    staff = User.objects.create_user(username=f"fuzz-staff-{secrets.token_hex(8)}", is_staff=True)
    token, _ = Token.objects.get_or_create(user=staff)
    return {
        "user": {
            "Authorization": f"Bearer {raw_key}",
            "X-User-Id": f"fuzz-user-{secrets.token_hex(8)}",
        },
        "staff": {"Authorization": f"Token {token.key}"},
    }


def real_ids(base_url: str, headers: dict[str, str]) -> dict[str, str]:
    """Ids of things the caller may see, by collection path (and by the parameter names of the
    routes that take them), created through the API; a route whose thing cannot be made gets
    a well-formed unknown id."""
    http = requests.Session()
    http.headers.update(headers)

    def created(path: str, body: dict) -> str | None:
        response = http.post(base_url + path, json=body, timeout=60)
        return response.json().get("id") if response.status_code == 201 else None

    ids = {
        "/api/memories": created("/api/memories", {"key": "fuzz", "value": "Likes odd bytes"}),
        "/api/topics": created("/api/topics", {"title": "fuzz"}),
        "/api/work-sessions": created("/api/work-sessions", {}),
        "/api/projects": created("/api/projects", {"name": f"fuzz {secrets.token_hex(4)}"}),
        "/api/personas": created("/api/personas", {"name": f"fuzz {secrets.token_hex(4)}"}),
        "/api/users": http.get(base_url + "/api/me", timeout=60).json().get("id"),
    }
    ids["/api/admin/memories"] = ids["/api/memories"]
    ids["topic_id"] = ids["/api/topics"]
    ids["session_id"] = ids["/api/work-sessions"]
    http.close()
    return {key: str(value) for key, value in ids.items() if value}


def run_corpus(host: str, port: int, headers: dict[str, str], report: dict) -> None:
    base_url = f"http://{host}:{port}"
    schema = requests.get(f"{base_url}/api/schema/?format=json", timeout=60).json()
    listed = requests.get(f"{base_url}/api/tools", headers=headers, timeout=60).json()["data"]
    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in listed}
    routes = routes_from_schema(schema, tools)
    ids = real_ids(base_url, headers)
    auth = tuple((name.encode(), value.encode()) for name, value in headers.items())
    host_header = f"{host}:{port}".encode()
    client = Client(host, port)
    try:
        for request in corpus(routes, ids=ids, body_limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE):
            try:
                answer = client.send(request, encode(request, host=host_header, auth=auth))
            except (OSError, http.client.HTTPException) as error:
                report["no_answers"].append(f"{error!r} for {request.describe()}")
                continue
            report["requests"] += 1
            report["kinds"].setdefault(request.kind, Counter())[str(answer.status)] += 1
            report["statuses"][str(answer.status)] += 1
            if answer.status >= 500:
                report["server_errors"].append(f"{answer.status} {request.describe()}")
            elif answer.status >= 400 and not _is_error_shape(answer):
                report["bad_error_shapes"].append(
                    f"{answer.status} {answer.content_type} {answer.body[:200]!r}"
                    f" for {request.describe()}"
                )
    finally:
        client.close()


def _is_error_shape(answer) -> bool:
    if not answer.content_type.startswith("application/json"):
        return False
    try:
        body = json.loads(answer.body)
    except ValueError:
        return False
    return (
        isinstance(body, dict)
        and set(body) == ERROR_KEYS
        and isinstance(body["detail"], str)
        and isinstance(body["fields"], dict)
    )


def _schemathesis_figures(report: FuzzReport) -> dict:
    figures = {"requests": report.requests, "statuses": dict(sorted(report.statuses.items()))}
    if report.scenarios:
        figures["scenarios"] = report.scenarios
    if report.skipped:
        figures["notes"] = report.skipped
    return figures


@pytest.mark.fuzz
def test_ten_thousand_fuzzed_requests_get_no_server_error(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip(
            "the 10,000-request fuzz runs in the PostgreSQL pass only (issue 22): the SQLite "
            "pass runs the bounded schema conformance test"
        )
    started = time.monotonic()
    counting = CountingApp(get_wsgi_application())
    results: dict = {"callers": {}}
    schema_failures: list[str] = []
    client_server_errors: list[str] = []
    bad_error_shapes: list[str] = []
    no_answers: list[str] = []

    with error_logs() as logged, serve(counting) as (host, port):
        base_url = f"http://{host}:{port}"
        for name, headers in callers().items():
            figures: dict = {}
            phase_started = time.monotonic()
            before = counting.snapshot()
            stateful = fuzz_stateful(
                base_url=base_url,
                headers=headers,
                scenarios=STATEFUL_SCENARIOS,
                steps=STATEFUL_STEPS,
            )
            figures["stateful"] = _schemathesis_figures(stateful)

            operations = fuzz(
                base_url=base_url,
                authorization=headers["Authorization"],
                extra_headers={k: v for k, v in headers.items() if k != "Authorization"},
                max_examples=OPERATION_EXAMPLES,
            )
            figures["operations"] = _schemathesis_figures(operations)

            odd: dict = {
                "requests": 0,
                "statuses": Counter(),
                "kinds": {},
                "server_errors": [],
                "bad_error_shapes": [],
                "no_answers": [],
            }
            run_corpus(host, port, headers, odd)
            client_server_errors += odd.pop("server_errors")
            bad_error_shapes += odd.pop("bad_error_shapes")
            no_answers += odd.pop("no_answers")
            figures["odd_bytes"] = odd

            served = counting.snapshot()
            served.subtract(before)
            figures["served"] = {
                "requests": sum(served.values()),
                "statuses": {str(code): count for code, count in sorted(served.items()) if count},
            }
            figures["seconds"] = round(time.monotonic() - phase_started, 1)
            results["callers"][name] = figures
            for report in (stateful, operations):
                schema_failures += [f"[{name}] {failure}" for failure in report.failures.values()]

    total = counting.total()
    statuses = counting.snapshot()
    results.update(
        {
            "database": connection.vendor,
            "requests_served": total,
            "statuses": {str(code): count for code, count in sorted(statuses.items())},
            "server_errors": sum(count for code, count in statuses.items() if code >= 500),
            "seconds": round(time.monotonic() - started, 1),
            "settings": {
                "stateful_scenarios": STATEFUL_SCENARIOS,
                "stateful_steps": STATEFUL_STEPS,
                "operation_examples": OPERATION_EXAMPLES,
            },
        }
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, default=dict) + "\n")
    print(f"\nfuzz totals ({RESULTS}):\n{json.dumps(results, indent=2, default=dict)}")

    assert not counting.server_errors, (
        f"{len(counting.server_errors)} server errors; the first ones:\n"
        + "\n".join(counting.server_errors[:10])
        + "\nlogged errors:\n"
        + "\n".join(logged.records[:10])
    )
    assert not client_server_errors, "\n".join(client_server_errors[:10])
    assert not no_answers, f"{len(no_answers)} requests got no answer:\n" + "\n".join(
        no_answers[:10]
    )
    assert not bad_error_shapes, (
        f"{len(bad_error_shapes)} 4xx answers without the API's error shape:\n"
        + "\n".join(bad_error_shapes[:10])
    )
    assert not schema_failures, "\n".join(schema_failures[:20])
    assert total >= MINIMUM_REQUESTS, results
