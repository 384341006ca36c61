"""A webhook receiver for the tests: a real HTTP server on 127.0.0.1 in a thread that verifies
every request with the `standardwebhooks` package against the endpoint's secret, as a product
would, and answers the statuses a test queues (200 once the queue is empty). A request that
fails verification is answered 401 and kept in `invalid`."""

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook, WebhookVerificationError

WAIT_SECONDS = 30
# A trickling answer stops after this long, whatever the sender does.
TRICKLE_MAX_SECONDS = 40.0


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    event: dict  # the verified, parsed body

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


class Receiver:
    def __init__(self) -> None:
        self.secret = ""
        self.statuses: list[int] = []
        self.received: list[Received] = []
        self.invalid: list[str] = []
        # Set: requests wait for it before answering (a slow receiver held by the test).
        self.hold: threading.Event | None = None
        # Set: the answer comes one byte every this many seconds and never ends (a status
        # line, then a header without end), until the sender closes the connection or
        # TRICKLE_MAX_SECONDS have passed; each such connection's seconds in `trickled`.
        self.trickle_seconds: float | None = None
        self.trickling = 0
        self.trickled: list[float] = []
        self.arrived = threading.Event()
        self._changed = threading.Condition()
        self._stopped = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.arrived.set()
                if receiver.trickle_seconds is not None:
                    receiver._trickle(self.wfile, receiver.trickle_seconds)
                    self.close_connection = True
                    return
                if receiver.hold is not None:
                    receiver.hold.wait(WAIT_SECONDS)
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    event = Webhook(receiver.secret).verify(body, headers)
                except WebhookVerificationError as error:
                    status = 401
                    with receiver._changed:
                        receiver.invalid.append(str(error))
                else:
                    with receiver._changed:
                        receiver.received.append(Received(headers, body, event))
                        status = receiver.statuses.pop(0) if receiver.statuses else 200
                        receiver._changed.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _trickle(self, wfile, seconds: float) -> None:
        answer = b"HTTP/1.1 200 OK\r\nX-Slowly: " + b"a" * 100_000
        started = time.monotonic()
        with self._changed:
            self.trickling += 1
            self._changed.notify_all()
        try:
            for byte in answer:
                if time.monotonic() - started > TRICKLE_MAX_SECONDS or self._stopped.is_set():
                    break
                wfile.write(bytes([byte]))
                wfile.flush()
                time.sleep(seconds)
        except OSError:  # the sender closed the connection: what a bounded attempt does
            pass
        finally:
            with self._changed:
                self.trickling -= 1
                self.trickled.append(time.monotonic() - started)
                self._changed.notify_all()

    def start(self) -> "Receiver":
        self._thread.start()
        return self

    def trickle_end(self) -> None:
        """End the trickling answers now (the connections close)."""
        self._stopped.set()

    def stop(self) -> None:
        self._stopped.set()
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()

    def events(self, event_type: str | None = None) -> list[dict]:
        with self._changed:
            return [
                item.event
                for item in self.received
                if event_type is None or item.event["type"] == event_type
            ]

    def wait_trickling(self, count: int, timeout: float = WAIT_SECONDS) -> None:
        """Until `count` connections are being answered a byte at a time."""
        with self._changed:
            assert self._changed.wait_for(lambda: self.trickling >= count, timeout), (
                f"{self.trickling} of {count} connections trickling"
            )

    def wait_for(self, count: int, timeout: float = WAIT_SECONDS) -> list[Received]:
        """Until `count` verified requests have arrived."""
        with self._changed:
            arrived = self._changed.wait_for(lambda: len(self.received) >= count, timeout)
            assert arrived, f"{len(self.received)} of {count} requests arrived: {self.invalid}"
            return list(self.received)


def body_of(received: Received) -> dict:
    return json.loads(received.body)
