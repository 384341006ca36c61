"""MCP at /mcp on the REST API's address: the WSGI application sends /mcp to the MCP server's
ASGI app (memories.mcp_server.mcp_http_app) through a2wsgi, everything else to Django.

a2wsgi runs the ASGI app on an event loop thread of its own and does not run its lifespan;
the MCP session manager needs its run() context active, so the lifespan is driven here, on
that loop, once per process: when the first /mcp request arrives (a process that never
serves MCP starts no loop)."""

import asyncio
import atexit
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from wsgiref.util import is_hop_by_hop

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
STARTUP_TIMEOUT_SECONDS = 30.0


def is_mcp_path(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


class _Lifespan:
    """An ASGI app's lifespan, driven on a loop: startup now, shutdown at exit."""

    def __init__(self, app, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.loop = loop
        self.started: Future = Future()
        self.shutdown: asyncio.Event | None = None
        self.done = asyncio.run_coroutine_threadsafe(self._run(), loop)

    async def _run(self) -> None:
        self.shutdown = asyncio.Event()
        sent_startup = False

        async def receive() -> dict:
            nonlocal sent_startup
            if not sent_startup:
                sent_startup = True
                return {"type": "lifespan.startup"}
            assert self.shutdown is not None
            await self.shutdown.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: dict) -> None:
            if message["type"] == "lifespan.startup.complete":
                self.started.set_result(None)
            elif message["type"] == "lifespan.startup.failed":
                self.started.set_exception(RuntimeError(message.get("message", "")))

        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        try:
            await self.app(scope, receive, send)
        except BaseException as exc:
            if not self.started.done():
                self.started.set_exception(exc)
            raise

    def stop(self, timeout: float = 5.0) -> None:
        if self.shutdown is not None:
            self.loop.call_soon_threadsafe(self.shutdown.set)
        try:
            self.done.result(timeout)
        except Exception:
            logger.exception("the MCP app did not shut down cleanly")


class McpMount:
    """A WSGI application: /mcp to the MCP app, every other path to `django_app`."""

    def __init__(self, django_app: Callable) -> None:
        self.django_app = django_app
        self._mcp_app: Callable | None = None
        self._lock = threading.Lock()

    def _mcp(self) -> Callable:
        with self._lock:
            if self._mcp_app is None:
                self._mcp_app = self._mcp_start()
            return self._mcp_app

    def _mcp_start(self) -> Callable:
        from a2wsgi import ASGIMiddleware

        from memories.mcp_server import mcp_http_app

        app = mcp_http_app()
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="mcp-event-loop", daemon=True).start()
        lifespan = _Lifespan(app, loop)
        lifespan.started.result(STARTUP_TIMEOUT_SECONDS)
        atexit.register(lifespan.stop)
        # a2wsgi's ASGI types are narrower TypedDicts than Starlette's mappings; same protocol.
        return ASGIMiddleware(app, loop=loop)  # type: ignore[arg-type]

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if not is_mcp_path(environ.get("PATH_INFO", "")):
            return self.django_app(environ, start_response)

        def start(status: str, headers: list, exc_info=None):
            # The server owns the connection: WSGI servers refuse hop-by-hop headers
            # (runserver's asserts) or drop them (gunicorn), such as the guard's
            # `Connection: close` for a body it leaves unread (gunicorn then closes anyway,
            # config.unread_body; runserver reads the rest of the body).
            kept = [(name, value) for name, value in headers if not is_hop_by_hop(name)]
            return start_response(status, kept, exc_info)

        return self._mcp()(environ, start)
