"""What a log line knows about where it was written: the request id, and inside a request the
user and route, inside a Celery task the task. Context variables, so a line logged deep in a
service carries them without being handed anything; set by ops.middleware for requests and
by ops.signals for tasks (which take the id of the request that queued them)."""

import re
import uuid
from contextvars import ContextVar, Token

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject, empty

# Fields added to every record: request_id, and in a task task_id and task.
_fields: ContextVar[dict[str, str] | None] = ContextVar("ops_log_fields", default=None)
# The request being answered: its user and route are read from it when a line is logged.
_request: ContextVar[HttpRequest | None] = ContextVar("ops_log_request", default=None)
# True while the embedded scheduler's periodic task runs (config.embedded_worker): one that
# finds nothing to do is not logged (ops.logs.IdlePeriodicTaskFilter).
periodic_run: ContextVar[bool] = ContextVar("ops_periodic_run", default=False)

# An incoming X-Request-Id is kept when it looks like an id (a UUID, a trace id, a proxy's
# request id); anything else (text, a megabyte, control characters) is replaced.
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

# DRF routers' regex groups, (?P<pk>[^/.]+), and path converters, <str:pk>: both become {pk}.
_REGEX_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


def request_id_from(header: str | None) -> str:
    """The caller's X-Request-Id when it is a sane id (1-128 letters, digits and ._:-), else a
    new one."""
    if header and SANE_REQUEST_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


def bind(**fields: str) -> Token:
    """Add fields to every line logged in this context, until `unbind(token)`."""
    return _fields.set({**(_fields.get() or {}), **fields})


def unbind(token: Token) -> None:
    _fields.reset(token)


def start_request(request: HttpRequest, request_id: str) -> None:
    """Bind the request and its id until `end_request`. Not undone by token: Django logs a
    4xx or 5xx answer after the last middleware returns, and those lines need the id too."""
    _request.set(request)
    _fields.set({"request_id": request_id})


def end_request() -> None:
    _request.set(None)
    _fields.set(None)


def fields() -> dict[str, str]:
    return _fields.get() or {}


def current_request() -> HttpRequest | None:
    return _request.get()


def current_request_id() -> str | None:
    return fields().get("request_id")


def request_user_id(request: HttpRequest) -> str | None:
    """The id of the user the request acts as, once authentication has run. Never runs it: a
    log line must not query the session table (Django's lazy user) on its own."""
    user = request.__dict__.get("user")  # DRF sets the authenticated user here too
    if isinstance(user, SimpleLazyObject):
        user = None if user._wrapped is empty else user._wrapped
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return str(user.pk)


def request_route(request: HttpRequest) -> str | None:
    """The URL pattern the request matched, as /api/memories/{pk}/approve: a bounded set of
    values for metric labels, unlike raw paths full of ids. None before (or without) a match."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.route is None:
        return None
    route = _CONVERTER.sub(r"{\1}", _REGEX_GROUP.sub(r"{\1}", match.route))
    return "/" + route.replace("^", "").replace("$", "")
