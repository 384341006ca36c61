"""A request body sent chunked, as the WSGI server hands it on.

gunicorn de-chunks a body as the application reads it (and marks `wsgi.input_terminated`), so
its framing errors surface in that read: a bad chunk size (`zz`), a bad chunk extension, a
missing CRLF after a chunk, a malformed trailer. Each is the client's error (400), not the
service's: gunicorn raises them as its ParseException, which nothing else would catch. A body
that stops (NoMoreData, or the connection's end where a chunk's CRLF was due) is an OSError,
read as an incomplete body where it is read.

Django's development server (runserver) does not de-chunk: it hands on no body at all, and
the chunks would be read as the next request on the connection."""

from django.http import UnreadablePostError
from gunicorn.http.errors import ChunkMissingTerminator, ParseException

from memories.errors import ServiceError


class MalformedBody(ServiceError):
    status_code = 400
    code = "malformed_body"


def malformed_detail(error: Exception) -> str:
    return (
        f"The chunked request body is malformed ({error}). Send well-formed chunks, or the "
        "body with a Content-Length."
    )


def is_dechunked(request) -> bool:
    """The server de-chunked the body and marked where it ends (gunicorn): it can be read
    without a Content-Length."""
    return bool(request.META.get("wsgi.input_terminated"))


class DechunkedInput:
    """The de-chunked wsgi.input, its framing errors raised as MalformedBody (naming body)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def read(self, size: int) -> bytes:
        try:
            return self.stream.read(size)
        except ChunkMissingTerminator as error:
            if not error.term:  # the connection ended there: the client stopped sending
                raise UnreadablePostError(str(error)) from None
            raise MalformedBody(malformed_detail(error), field="body") from None
        except ParseException as error:
            raise MalformedBody(malformed_detail(error), field="body") from None
