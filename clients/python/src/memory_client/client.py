"""MemoryClient: the service's REST API over httpx, for one end user at a time. The methods
that are one request are memory_client.endpoints', shared with AsyncMemoryClient."""

import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from memory_client import calls
from memory_client.endpoints import Endpoints
from memory_client.transport import Connection, RetryPolicy, result
from memory_client.types import Filter, Memory

T = TypeVar("T")


class MemoryClient(Endpoints):
    """A product backend's connection to the memory service, acting for the end user
    `user_id` (sent as X-User-Id; None for a key's own account or a review key).

    `timeout` is httpx's, in seconds. 429 and 503 answers are sent again up to `max_retries`
    times after their Retry-After, when that is at most `max_retry_wait` seconds. Errors raise
    memory_client.errors.MemoryServiceError subclasses carrying the error JSON. Pass
    `http_client` to use your own httpx.Client (proxies, transports, event hooks); it is then
    yours to close."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        user_id: str | None = None,
        timeout: float | httpx.Timeout = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.connection = Connection(base_url, api_key, user_id)
        self.retry = RetryPolicy(max_retries=max_retries, max_wait=max_retry_wait)
        self._http = http_client or httpx.Client(timeout=timeout)
        self._owns_http = http_client is None

    @property
    def user_id(self) -> str | None:
        return self.connection.user_id

    def with_user(self, user_id: str | None) -> Self:
        """A client for another end user on the same connection pool (closing it leaves the
        pool open; close the client it came from)."""
        other = object.__new__(type(self))
        other.connection = Connection(self.connection.base_url, self.connection.api_key, user_id)
        other.retry = self.retry
        other._http = self._http
        other._owns_http = False
        return other

    def run(self, call: calls.Call[T]) -> T:
        """Send a prepared request (memory_client.calls), retrying 429 and 503 answers."""
        retries_made = 0
        while True:
            response = self._http.request(**self.connection.request(call))
            wait = self.retry.delay(response, retries_made)
            if wait is None:
                return result(call, response)
            response.close()
            time.sleep(wait)
            retries_made += 1

    # The methods of more than one request; AsyncMemoryClient has each, awaited.

    def iter_memories(self, *, filter: Filter | None = None, **filters: Any) -> Iterator[Memory]:
        """GET /api/memories page after page (`filters`: status, query, scope, project_id,
        persona_id, category, source, page_size); `filter`, the memories it matches
        (memory_client.types.Filter, e.g. {"metadata.app": "ios"})."""
        page = 1
        while True:
            answer = self.run(calls.list_page({**filters, "filter": filter}, page))
            yield from answer["data"]
            if not answer["next"]:
                return
            page += 1

    def erase_user(self) -> None:
        """Erase the end user and everything of theirs, for good (POST /api/me/erase)."""
        confirm = self.user_id
        if confirm is None:
            who = self.me()
            confirm = who["external_id"] or who["username"]
        self.run(calls.erase_user(confirm))

    # Last: inside the class body, a method named `list` hides the builtin from the
    # annotations of the methods after it.
    def list(self, *, filter: Filter | None = None, **filters: Any) -> Iterator[Memory]:
        """The user's memories, following pages; as iter_memories."""
        return self.iter_memories(filter=filter, **filters)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
