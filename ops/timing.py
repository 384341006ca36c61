"""Where the time of one request goes, for the caller: with SERVER_TIMING on, every answer
carries a `Server-Timing` header (the W3C header browsers' developer tools and HTTP clients
read) with the time of each stage the request went through and `app`, the whole time Django
spent on it. What a client measures beyond `app` is the server and the network: gunicorn,
the socket, HTTP parsing.

Stages are recorded per request in a context variable, so code deep in a service times a
block with `stage(name)` without being handed anything; outside a request (a Celery task, a
management command) nothing is recorded. A stage entered twice adds up."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Stage name -> seconds, for the request being answered; None outside a request.
_stages: ContextVar[dict[str, float] | None] = ContextVar("ops_request_stages", default=None)


def start_request() -> None:
    _stages.set({})


def end_request() -> dict[str, float]:
    """The stages of the request, in the order they were first entered; stops recording."""
    stages = _stages.get() or {}
    _stages.set(None)
    return stages


def record(name: str, seconds: float) -> None:
    stages = _stages.get()
    if stages is not None:
        stages[name] = stages.get(name, 0.0) + seconds


@contextmanager
def stage(name: str) -> Iterator[None]:
    """`with stage("auth"): ...` adds the block's time to the request's stage `name`."""
    started = time.perf_counter()
    try:
        yield
    finally:
        record(name, time.perf_counter() - started)


def header_value(stages: dict[str, float], *, app_seconds: float) -> str:
    """The Server-Timing value: `auth;dur=0.41, embedding;dur=4.62, ..., app;dur=12.30`
    (milliseconds, as the header's `dur` is)."""
    parts = [f"{name};dur={seconds * 1000:.2f}" for name, seconds in stages.items()]
    parts.append(f"app;dur={app_seconds * 1000:.2f}")
    return ", ".join(parts)


def parse_header(value: str) -> dict[str, float]:
    """A Server-Timing value back into {name: milliseconds} (entries without dur are left
    out); the inverse of header_value, for clients and tests."""
    timings: dict[str, float] = {}
    for entry in value.split(","):
        name, *params = (part.strip() for part in entry.split(";"))
        for param in params:
            key, _, number = param.partition("=")
            if key.strip() == "dur" and name:
                timings[name] = timings.get(name, 0.0) + float(number)
    return timings
