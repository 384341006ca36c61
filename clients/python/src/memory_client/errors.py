"""Errors the service answered, as exceptions carrying its error JSON: `{"code", "detail",
"fields"}` (docs/api.md), so a program can show the message beside the field at fault."""

from typing import Any


class MemoryServiceError(Exception):
    """An answer of the service that is an error (4xx or 5xx).

    `status` is the HTTP status, `body` the error JSON (None when the answer was not JSON, as
    a proxy's error page), `code` its stable code (`invalid`, `not_found`, `throttled`, ...),
    `detail` its sentence, `fields` the messages by field, `field` the first field named."""

    def __init__(
        self, status: int, body: Any, *, text: str = "", retry_after: float | None = None
    ) -> None:
        self.status = status
        self.body = body if isinstance(body, dict) else None
        self.text = text
        self.retry_after = retry_after
        error = self.body or {}
        self.code: str = str(error.get("code") or "error")
        self.detail: str = str(error.get("detail") or text or f"HTTP {status}")
        fields = error.get("fields")
        self.fields: dict[str, list[str]] = fields if isinstance(fields, dict) else {}
        super().__init__(f"{status} {self.code}: {self.detail}")

    @property
    def field(self) -> str | None:
        return next(iter(self.fields), None)


class BadRequest(MemoryServiceError):
    """400: the input is refused; `fields` says which field and why."""


class AuthenticationFailed(MemoryServiceError):
    """401: no key, or an unknown or revoked one."""


class PermissionDenied(MemoryServiceError):
    """403: the key lacks a scope (named in `detail`), or the caller may not do this."""


class NotFound(MemoryServiceError):
    """404: no such memory (or other object) of this user."""


class Conflict(MemoryServiceError):
    """409: the object changed meanwhile (deleted, no longer pending)."""


class PayloadTooLarge(MemoryServiceError):
    """413: the body is over the service's MAX_REQUEST_BYTES; send fewer items at once."""


class RateLimited(MemoryServiceError):
    """429 after the retries (or with a Retry-After longer than the client waits):
    `retry_after` is how many seconds the service asked for."""


class ServerError(MemoryServiceError):
    """5xx."""


class ServiceUnavailable(ServerError):
    """503 after the retries: the embedding service is unavailable."""


_BY_STATUS: dict[int, type[MemoryServiceError]] = {
    400: BadRequest,
    401: AuthenticationFailed,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
    503: ServiceUnavailable,
}


def error_for(
    status: int, body: Any, *, text: str = "", retry_after: float | None = None
) -> MemoryServiceError:
    """The exception of the class for this status."""
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else MemoryServiceError)
    return cls(status, body, text=text, retry_after=retry_after)
