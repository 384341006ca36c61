"""The requests the clients make, as values: each method of MemoryClient and
AsyncMemoryClient builds one Call here and hands it to its transport, which sends it (with
retries) and parses the answer with the call's `parse`. So the sync and the async client
share everything but the sending."""

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

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


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: method, path under the service's address, query, JSON body, and how to
    read a successful answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, str | int] = field(default_factory=dict)
    json: Any = None


def _json(response: httpx.Response) -> Any:
    return response.json()


def _data(response: httpx.Response) -> Any:
    return response.json()["data"]


def _nothing(response: httpx.Response) -> None:
    return None


def _ndjson(response: httpx.Response) -> Any:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def _id(value: str) -> str:
    # Ids go into the path: quoted, so a stray "/" or "?" cannot reach another endpoint.
    return quote(str(value), safe="")


def _params(values: Mapping[str, Any]) -> dict[str, str | int]:
    """Query parameters without the ones left as None; booleans as the API spells them."""
    params: dict[str, str | int] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            params[name] = "true" if value else "false"
        elif isinstance(value, int):
            params[name] = value
        else:
            params[name] = str(value)
    return params


def _body(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def save(key: str, value: str, fields: Mapping[str, Any]) -> Call[SavedMemory]:
    return Call("POST", "/api/memories", _json, json={"key": key, "value": value, **fields})


def save_many(memories: Iterable[Mapping[str, Any]]) -> Call[list[SavedMemory]]:
    return Call("POST", "/api/memories/batch", _data, json={"memories": list(memories)})


def search(query: str, top_k: int, context: Mapping[str, Any]) -> Call[list[RecallResult]]:
    params = _params({"q": query, "top_k": top_k, **context})
    return Call("GET", "/api/memories/search", _data, params=params)


def context(query: str, context: Mapping[str, Any]) -> Call[Context]:
    return Call("POST", "/api/memories/context", _json, json=_body({"query": query, **context}))


def get(memory_id: str) -> Call[Memory]:
    return Call("GET", f"/api/memories/{_id(memory_id)}", _json)


def update(memory_id: str, fields: Mapping[str, Any]) -> Call[Memory]:
    return Call("PATCH", f"/api/memories/{_id(memory_id)}", _json, json=dict(fields))


def delete(memory_id: str) -> Call[None]:
    return Call("DELETE", f"/api/memories/{_id(memory_id)}", _nothing)


def restore(memory_id: str) -> Call[Memory]:
    return Call("POST", f"/api/memories/{_id(memory_id)}/restore", _json)


def list_page(filters: Mapping[str, Any], page: int) -> Call[dict[str, Any]]:
    """One page of GET /api/memories: {"data", "count", "next", "previous"}."""
    return Call("GET", "/api/memories", _json, params=_params({**filters, "page": page}))


def export(include_deleted: bool) -> Call[list[ExportedMemory]]:
    params = _params({"include_deleted": include_deleted or None})
    return Call("GET", "/api/memories/export", _ndjson, params=params)


def me() -> Call[Me]:
    return Call("GET", "/api/me", _json)


def erase_user(confirm: str) -> Call[None]:
    return Call("POST", "/api/me/erase", _nothing, json={"confirm": confirm})


def create_topic(fields: Mapping[str, Any]) -> Call[Topic]:
    return Call("POST", "/api/topics", _json, json=_body(fields))


def create_project(name: str) -> Call[Project]:
    return Call("POST", "/api/projects", _json, json={"name": name})


def add_messages(topic_id: str, messages: Iterable[Mapping[str, str]]) -> Call[MessagesPosted]:
    body = {"messages": [dict(message) for message in messages]}
    return Call("POST", f"/api/topics/{_id(topic_id)}/messages", _json, json=body)


def extract(topic_id: str) -> Call[ExtractionRun]:
    return Call("POST", f"/api/memories/extract/{_id(topic_id)}", _json)


def extraction_run(task_id: str) -> Call[ExtractionRun]:
    return Call("GET", f"/api/extraction-runs/{_id(task_id)}", _json)


def tools() -> Call[list[Tool]]:
    return Call("GET", "/api/tools", _data)


def call_tool(name: str, arguments: Any, context: Mapping[str, Any]) -> Call[dict[str, Any]]:
    """POST /api/tools/{name}: `arguments` an object or the JSON string a model produced."""
    params = _params(context)
    return Call("POST", f"/api/tools/{_id(name)}", _json, params=params, json=arguments)
