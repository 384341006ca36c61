"""Say `Connection: close` when gunicorn is going to close the connection because the
request's body was not read.

A view may answer without reading the body (401 before parsing, 413 over the limit). gunicorn
then drains at most 64 KiB of it before the next request and otherwise closes the connection,
yet the answer it already sent said `keep-alive`: a client that sent its next request on that
connection sees it dropped. gunicorn ignores a Connection header set by the application, but
closes (and says so) when its request object is marked `must_close`. So the gunicorn
`pre_request` hook leaves that object where this WSGI middleware, which runs in the same
thread, finds it, and the middleware marks it when the answer starts with body left unread."""

import threading
from collections.abc import Callable, Iterable

_current = threading.local()


def remember_request(worker, req) -> None:
    """gunicorn's pre_request hook: the request the next WSGI call in this thread answers."""
    _current.request = req


class _CountingInput:
    """wsgi.input, counting what the application read and noticing its end."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.read_bytes = 0
        self.ended = False

    def _count(self, data: bytes, asked: int | None) -> bytes:
        self.read_bytes += len(data)
        # gunicorn's input gives fewer bytes than asked only at the body's end.
        if asked is None or asked < 0 or len(data) < asked:
            self.ended = True
        return data

    def read(self, size: int | None = -1) -> bytes:
        return self._count(self.stream.read(size) if size is not None else self.stream.read(), size)

    def readline(self, size: int | None = -1) -> bytes:
        line = self.stream.readline(size) if size is not None else self.stream.readline()
        self.read_bytes += len(line)
        if not line:
            self.ended = True
        return line

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def _body_left_unread(environ: dict, body: _CountingInput) -> bool:
    length = environ.get("CONTENT_LENGTH") or ""
    if length.isdigit():
        return body.read_bytes < int(length)
    # No length: a body only when the server de-chunked one; read to its end or not.
    chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    return chunked and not body.ended


class CloseWhenBodyUnread:
    def __init__(self, application: Callable) -> None:
        self.application = application

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        request = getattr(_current, "request", None)
        _current.request = None
        if request is None:  # not under gunicorn with the hook (runserver drains bodies)
            return self.application(environ, start_response)
        body = _CountingInput(environ["wsgi.input"])
        environ["wsgi.input"] = body

        def start(status, headers, exc_info=None):
            if _body_left_unread(environ, body):
                request.must_close = True
            return start_response(status, headers, exc_info)

        return self.application(environ, start)
