"""MemoryClient: the service's REST API over httpx, for one end user at a time."""

import time
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from memory_client import calls
from memory_client.transport import Connection, RetryPolicy, result
from memory_client.types import (
    Context,
    ExportedMemory,
    ExtractionRun,
    Me,
    Memory,
    MessagesPosted,
    Project,
    RecallResult,
    SavedMemory,
    Tool,
    Topic,
)

T = TypeVar("T")


class MemoryClient:
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

    # Memories

    def save(self, *, key: str, value: str, **fields: Any) -> SavedMemory:
        """Save a fact (POST /api/memories): `fields` as the API takes them (category,
        importance, confidence, scope, project_id, persona_id, valid_from, replace). A key
        names one fact: another value replaces the current one (`superseded_ids`); the same
        value answers the memory that says it (`created` false)."""
        return self.run(calls.save(key, value, fields))

    def save_many(self, memories: Iterable[Mapping[str, Any]]) -> list[SavedMemory]:
        """Save up to 500 memories at once, all or nothing, in order (POST /api/memories/batch)."""
        return self.run(calls.save_many(memories))

    def search(self, query: str, top_k: int = 10, **context: Any) -> list[RecallResult]:
        """Scored recall of current memories; `context`: topic_id, project_id, persona_id,
        work_session_id bring those scopes in, as_of recalls what was current then,
        min_relevance (0 to 1) replaces the relevance gate (0: the top_k whatever it says)."""
        return self.run(calls.search(query, top_k, context))

    def context(self, query: str, **context: Any) -> Context:
        """The hint for a model turn and the memories in it (POST /api/memories/context);
        `context` as for search, and top_k."""
        return self.run(calls.context(query, context))

    def get(self, memory_id: str) -> Memory:
        return self.run(calls.get(memory_id))

    def update(self, memory_id: str, **fields: Any) -> Memory:
        """Edit key, value, category, importance or confidence (PATCH; re-embeds)."""
        return self.run(calls.update(memory_id, fields))

    def delete(self, memory_id: str) -> None:
        """Soft delete (restore() brings it back)."""
        self.run(calls.delete(memory_id))

    def restore(self, memory_id: str) -> Memory:
        return self.run(calls.restore(memory_id))

    def export(self, *, include_deleted: bool = False) -> list[ExportedMemory]:
        """Every memory of the user, every status, oldest first (the NDJSON export, parsed)."""
        return self.run(calls.export(include_deleted))

    def iter_memories(self, **filters: Any) -> Iterator[Memory]:
        """GET /api/memories page after page (`filters`: status, query, scope, project_id,
        persona_id, category, source, page_size)."""
        page = 1
        while True:
            answer = self.run(calls.list_page(filters, page))
            yield from answer["data"]
            if not answer["next"]:
                return
            page += 1

    # The user

    def me(self) -> Me:
        return self.run(calls.me())

    def erase_user(self) -> None:
        """Erase the end user and everything of theirs, for good (POST /api/me/erase)."""
        confirm = self.user_id
        if confirm is None:
            who = self.me()
            confirm = who["external_id"] or who["username"]
        self.run(calls.erase_user(confirm))

    # Conversations and extraction

    def create_topic(self, title: str = "", **fields: Any) -> Topic:
        """A conversation to post messages to (`fields`: persona_id, project_id, channel_id)."""
        return self.run(calls.create_topic({"title": title, **fields}))

    def create_project(self, name: str) -> Project:
        return self.run(calls.create_project(name))

    def add_messages(self, topic_id: str, messages: Iterable[Mapping[str, str]]) -> MessagesPosted:
        """Mirror a conversation's messages ({role, content}) for extraction; the answer's
        `extraction` says whether they started one."""
        return self.run(calls.add_messages(topic_id, messages))

    def extract(self, topic_id: str) -> ExtractionRun:
        """Ask for extraction of a conversation now (throttled per user: 429 is retried)."""
        return self.run(calls.extract(topic_id))

    def extraction_run(self, task_id: str) -> ExtractionRun:
        return self.run(calls.extraction_run(task_id))

    # Tools

    def tools(self) -> list[Tool]:
        """The memory tools in OpenAI's function-calling format."""
        return self.run(calls.tools())

    def call_tool(self, name: str, arguments: Any, **context: Any) -> dict[str, Any]:
        """Run a tool with a model's arguments (an object or its JSON string); `context`:
        topic_id, project_id, persona_id, work_session_id."""
        return self.run(calls.call_tool(name, arguments, context))

    # Last: inside the class body, a method named `list` hides the builtin from the
    # annotations of the methods after it.
    def list(self, **filters: Any) -> Iterator[Memory]:
        """The user's memories, following pages; as iter_memories."""
        return self.iter_memories(**filters)

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
