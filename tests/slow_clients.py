"""Support for tests/test_slow_clients.py and bench/slow_clients.py: the production set as
`scripts/serve --production` starts it, connections that send their requests slowly, and
another client that times its requests meanwhile."""

import http.client
import json
import math
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self
from urllib.parse import urlencode

from tests.topology import REPO, Service, is_ready, wait_until

STARTUP_SECONDS = 180


# --- the production set -------------------------------------------------------------------------


def production_environment(*, database_url: str, redis_url: str, port: int, tmp: Path) -> dict:
    """What `scripts/serve --production` reads, with this run's database, Redis database,
    port and metrics directory, and no LLM (no model call is made here); the rest of the
    environment (FRONT too) passes through."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CELERY_", "DATABASE_", "PROMETHEUS_", "METRICS_", "LLM_"))
        and name not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "CACHE_URL")
        and name not in ("HOST", "PORT", "TRUSTED_PROXY_COUNT")
    }
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": redis_url,
        "CACHE_URL": redis_url,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "WEB_CONCURRENCY": "2",
        "WORKER_CONCURRENCY": "1",
        "EMBEDDER": "local",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics"),
        "LOG_FORMAT": "json",
        "PYTHONUNBUFFERED": "1",
    }


def manage(env: dict, *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"manage.py {arguments[0]}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def serve_production(
    env: dict, log_dir: Path, command: tuple[str, ...] = ("scripts/serve", "--production")
) -> Service:
    """`scripts/serve --production`, as an operator runs it (or another command), until
    /readyz answers 200 on HOST:PORT through whatever it put there (nginx; gunicorn with
    FRONT=none)."""
    service = Service("serve", list(command), env, log_dir)
    port = int(env["PORT"])
    try:
        wait_until(
            lambda: is_ready(port),
            what="/readyz through scripts/serve --production to answer 200",
            timeout=STARTUP_SECONDS,
            alive=[service],
        )
    except BaseException:
        service.stop()
        raise
    return service


def remove_front_directory(env: dict) -> None:
    """What scripts/serve left under var/nginx/<port> (a config, empty buffer directories)."""
    shutil.rmtree(REPO / "var" / "nginx" / env["PORT"], ignore_errors=True)


def api_key(env: dict) -> str:
    return manage(env, "create_api_key", "slow-clients", "--scopes", "read,write").strip()


# --- the slow clients ---------------------------------------------------------------------------


class HeldConnections:
    """Threads that each hold a connection to 127.0.0.1:`port` until stop(); `open` counts
    the connections open now."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.open = 0
        self.threads: list[threading.Thread] = []

    def start(self) -> Self:
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=5)

    def _closed(self, connection) -> None:
        """A held connection ends: counted out and closed."""
        with self.lock:
            self.open -= 1
        connection.close()


class SlowClients(HeldConnections):
    """Connections that each hold one request open: `stalled` ones send part of a request
    line or of the headers and then nothing, `trickling` ones add a header byte per second,
    `slow_bodies` announce a body and send a byte of it per second. A connection the server
    closes (nginx's 408 after client_header_timeout) is opened again at once, as an attacker
    would, until stop()."""

    def __init__(self, port: int, *, stalled: int, trickling: int, slow_bodies: int) -> None:
        super().__init__(port)
        self.opened = 0
        kinds = ["stalled"] * stalled + ["trickling"] * trickling + ["slow body"] * slow_bodies
        self.threads = [
            threading.Thread(target=self._hold, args=(kind, n), daemon=True)
            for n, kind in enumerate(kinds)
        ]

    def _first_bytes(self, kind: str, n: int) -> bytes:
        host = f"Host: 127.0.0.1:{self.port}\r\n"
        if kind == "stalled" and n % 2:
            return b"GET /api/memories?page_size=1 HT"  # a partial request line
        if kind == "stalled":
            return f"GET /api/memories HTTP/1.1\r\n{host}X-Stalled: ".encode()
        if kind == "trickling":
            return f"GET /api/memories HTTP/1.1\r\n{host}X-Trickle: ".encode()
        return (
            f"POST /api/memories HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
            "Content-Length: 100000\r\n\r\n"
        ).encode()

    def _hold(self, kind: str, n: int) -> None:
        while not self.stop_event.is_set():
            try:
                connection = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            except OSError:
                time.sleep(0.1)
                continue
            with self.lock:
                self.open += 1
                self.opened += 1
            try:
                connection.sendall(self._first_bytes(kind, n))
                connection.settimeout(1.0)
                while not self.stop_event.is_set():
                    try:
                        if not connection.recv(4096):
                            break  # closed by the server
                        break  # an answer (a 408): it closes next
                    except TimeoutError:
                        pass
                    if kind != "stalled":
                        connection.sendall(b"a")  # one byte a second
            except OSError:
                pass
            finally:
                self._closed(connection)


# --- the other client ---------------------------------------------------------------------------


@dataclass
class Answer:
    what: str
    status: int | None  # None: no answer within the timeout, or the connection failed
    seconds: float
    error: str = ""


@dataclass
class Probe:
    """A well-behaved client: one request at a time, each on a new connection (a client
    that keeps one open would not show whether the server still accepts), in turn
    /healthz, /readyz, a search and a create through the product's API key."""

    port: int
    key: str
    timeout: float
    answers: list[Answer] = field(default_factory=list)
    calls: int = 0

    def request(self) -> Answer:
        kinds = ("healthz", "readyz", "search", "create")
        what = kinds[self.calls % len(kinds)]
        self.calls += 1
        headers = {"Authorization": f"Bearer {self.key}", "X-User-Id": "slow-clients-probe"}
        body = None
        if what == "healthz":
            method, path, headers = "GET", "/healthz", {}
        elif what == "readyz":
            method, path, headers = "GET", "/readyz", {}
        elif what == "search":
            method, path = "GET", "/api/memories/search?" + urlencode({"q": "coffee order"})
        else:
            method, path = "POST", "/api/memories"
            body = json.dumps({"key": f"note {self.calls}", "value": "Drinks oat milk flat whites"})
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            answer = Answer(what, response.status, time.perf_counter() - started)
        except OSError as exc:
            answer = Answer(what, None, time.perf_counter() - started, type(exc).__name__)
        finally:
            connection.close()
        self.answers.append(answer)
        return answer

    def run(self, seconds: float, *, interval: float, during=None) -> list[Answer]:
        """Requests every `interval` for `seconds`; `during()` is called after each one."""
        answers = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            answers.append(self.request())
            if during is not None:
                during()
            time.sleep(interval)
        return answers


def summary(answers: list[Answer]) -> dict:
    """Counts and latency figures (ms) of a probe's answers; unanswered ones count at the
    time the client gave up."""
    times = sorted(answer.seconds * 1000 for answer in answers)
    answered = [a for a in answers if a.status is not None and a.status < 500]
    return {
        "requests": len(answers),
        "answered": len(answered),
        "unanswered_or_5xx": len(answers) - len(answered),
        "p50_ms": round(statistics.median(times), 1) if times else None,
        "p95_ms": round(times[math.ceil(0.95 * len(times)) - 1], 1) if times else None,
        "max_ms": round(times[-1], 1) if times else None,
    }


# --- MCP stream clients ------------------------------------------------------------------------


class McpStreamClients(HeldConnections):
    """Connections that each ask for MCP's server stream (GET /mcp, Accept:
    text/event-stream, with an API key) and then keep the connection open, sending nothing,
    as a client waiting on the stream does; one the server closes is opened again and asks
    again, until stop(). `statuses` counts the answers' status lines and Allow headers."""

    def __init__(self, port: int, key: str, count: int) -> None:
        super().__init__(port)
        self.key = key
        self.statuses: dict[tuple[int, str | None], int] = {}
        self.threads = [threading.Thread(target=self._hold, daemon=True) for _ in range(count)]

    def _hold(self) -> None:
        headers = {
            "Authorization": f"Bearer {self.key}",
            "X-User-Id": "mcp-stream-client",
            "Accept": "text/event-stream",
        }
        while not self.stop_event.is_set():
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5.0)
            try:
                connection.request("GET", "/mcp", headers=headers)
            except OSError:
                connection.close()
                time.sleep(0.1)
                continue
            with self.lock:
                self.open += 1
            try:
                response = connection.getresponse()
                answer = (response.status, response.getheader("Allow"))
                with self.lock:
                    self.statuses[answer] = self.statuses.get(answer, 0) + 1
                if response.status == 200:
                    # A stream: read it as it comes, for as long as it lasts.
                    while not self.stop_event.is_set():
                        try:
                            if not response.read1(4096):
                                break
                        except TimeoutError:
                            pass
                else:
                    # A whole answer: the connection stays, idle, until the server closes it.
                    response.read()
                    while not self.stop_event.is_set() and _still_open(connection.sock):
                        pass
            except OSError:
                pass
            finally:
                self._closed(connection)


def _still_open(sock: socket.socket | None) -> bool:
    """Whether the server has not closed this idle connection (waits up to a second)."""
    if sock is None:
        return False
    sock.settimeout(1.0)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except TimeoutError:
        return True
    except OSError:
        return False


@dataclass
class McpProbe:
    """A well-behaved client, one request at a time on a new connection: in turn /healthz
    and an MCP tools/call (memory_recall) through the product's API key."""

    port: int
    key: str
    timeout: float
    calls: int = 0

    def request(self) -> Answer:
        self.calls += 1
        if self.calls % 2:
            method, path, body, headers = "GET", "/healthz", None, {}
            what = "healthz"
        else:
            what = "mcp tools/call"
            method, path = "POST", "/mcp"
            call = {"name": "memory_recall", "arguments": {"query": "coffee order"}}
            message = {"jsonrpc": "2.0", "id": self.calls, "method": "tools/call", "params": call}
            body = json.dumps(message)
            headers = {
                "Authorization": f"Bearer {self.key}",
                "X-User-Id": "mcp-probe",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            status = response.status
            if what != "healthz" and status == 200 and "result" not in json.loads(data):
                status = 599  # a JSON-RPC error: not the answer asked for
            return Answer(what, status, time.perf_counter() - started)
        except OSError as exc:
            return Answer(what, None, time.perf_counter() - started, type(exc).__name__)
        finally:
            connection.close()
