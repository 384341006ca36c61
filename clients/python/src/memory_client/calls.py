"""The requests the clients make, as values. A builder here takes exactly what the client
method of its name takes and carries that method's docstring: memory_client.endpoints makes
it the method of both MemoryClient and AsyncMemoryClient, which send the Call through run()
(with retries) and parse the answer with the call's `parse`. So the sync and the async
client share everything but the sending, and `client.run(calls.search("diet"))` is
`client.search("diet")`."""

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memory_client.types import (
    Context,
    Entity,
    EntityDetail,
    ExplainedSearch,
    ExportedMemory,
    ExtractionRun,
    Filter,
    Me,
    Memory,
    MessagesPosted,
    Profile,
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
    """Query parameters without the ones left as None; booleans as the API spells them, an
    object (a filter) as its JSON text, which is how a query string carries it."""
    params: dict[str, str | int] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            params[name] = "true" if value else "false"
        elif isinstance(value, int):
            params[name] = value
        elif isinstance(value, Mapping):
            params[name] = _filter_text(value)
        else:
            params[name] = str(value)
    return params


def _filter_text(conditions: Filter) -> str:
    """A filter's JSON text, as a query string carries it (compact: the service takes at
    most 10,000 characters)."""
    return json.dumps(dict(conditions), ensure_ascii=False, separators=(",", ":"))


def _body(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


# Memories


def save(
    *, key: str, value: str, metadata: Mapping[str, Any] | None = None, **fields: Any
) -> Call[SavedMemory]:
    """Save a fact (POST /api/memories): `fields` as the API takes them (category,
    importance, confidence, scope, project_id, persona_id, valid_from, replace, pinned,
    entities: [{"name", "kind", "relation"}]). A key
    names one fact: another value replaces the current one (`superseded_ids`); the same
    value answers the memory that says it (`created` false), its metadata merged with
    `metadata`. `metadata`: your own keys (a JSON object: the app, a ticket id), saved as
    given, filtered on (filter={"metadata.app": "ios"}), never ranked on."""
    body = _body({"key": key, "value": value, "metadata": metadata, **fields})
    return Call("POST", "/api/memories", _json, json=body)


def save_many(memories: Iterable[Mapping[str, Any]]) -> Call[list[SavedMemory]]:
    """Save up to 500 memories at once, all or nothing, in order (POST /api/memories/batch);
    each a mapping of save()'s arguments, `metadata` included."""
    return Call("POST", "/api/memories/batch", _data, json={"memories": list(memories)})


def search(
    query: str, top_k: int = 10, *, filter: Filter | None = None, **context: Any
) -> Call[list[RecallResult]]:
    """Scored recall of current memories; `context`: topic_id, project_id, persona_id,
    work_session_id bring those scopes in, as_of recalls what was current then,
    min_relevance (0 to 1) replaces the relevance gate (0: the top_k whatever it says).
    `filter` recalls among the memories it matches only (memory_client.types.Filter, e.g.
    {"metadata.app": "ios", "importance": {"gte": 0.7}}): inside the search, so it still
    gives top_k."""
    params = _params({"q": query, "top_k": top_k, "filter": filter, **context})
    return Call("GET", "/api/memories/search", _data, params=params)


def search_explained(
    query: str, top_k: int = 10, *, filter: Filter | None = None, **context: Any
) -> Call[ExplainedSearch]:
    """search() with explain=true: {"data": the results, "explanation": how the query was
    read and every memory recall considered, returned or not, with its score parts and the
    reason in words}. Counts as no access."""
    params = _params({"q": query, "top_k": top_k, "filter": filter, "explain": "true", **context})
    return Call("GET", "/api/memories/search", _json, params=params)


def context(query: str, *, filter: Filter | None = None, **context: Any) -> Call[Context]:
    """The hint for a model turn and the memories in it (POST /api/memories/context);
    `context` as for search, and top_k; profile=True puts the user's profile summary first;
    explain=True adds `explanation` (as search_explained; counts as no access).
    `filter` as for search: the hint, its pinned memories too, is made of the memories it
    matches."""
    body = _body({"query": query, "filter": dict(filter) if filter else None, **context})
    return Call("POST", "/api/memories/context", _json, json=body)


def get(memory_id: str) -> Call[Memory]:
    return Call("GET", f"/api/memories/{_id(memory_id)}", _json)


def update(
    memory_id: str,
    *,
    metadata: Mapping[str, Any] | None = None,
    replace_metadata: bool = False,
    **fields: Any,
) -> Call[Memory]:
    """Edit key, value, category, importance, confidence or pinned (PATCH; re-embeds), and
    metadata. `metadata` is a JSON merge patch (RFC 7386) of the memory's: a key given
    replaces that key, an object merges into an object, a key set to None is removed, the
    keys not named stay. replace_metadata=True makes `metadata` the whole new metadata
    (PUT), so `metadata={}` clears it."""
    body = dict(fields)
    if metadata is not None:
        body["metadata"] = dict(metadata)
    method = "PUT" if replace_metadata else "PATCH"
    return Call(method, f"/api/memories/{_id(memory_id)}", _json, json=body)


def delete(memory_id: str) -> Call[None]:
    """Soft delete (restore() brings it back)."""
    return Call("DELETE", f"/api/memories/{_id(memory_id)}", _nothing)


def restore(memory_id: str) -> Call[Memory]:
    return Call("POST", f"/api/memories/{_id(memory_id)}/restore", _json)


def export(
    *, include_deleted: bool = False, filter: Filter | None = None
) -> Call[list[ExportedMemory]]:
    """Every memory of the user, every status, oldest first (the NDJSON export, parsed);
    with `filter`, those it matches."""
    params = _params({"include_deleted": include_deleted or None, "filter": filter})
    return Call("GET", "/api/memories/export", _ndjson, params=params)


def list_page(filters: Mapping[str, Any], page: int) -> Call[dict[str, Any]]:
    """One page of GET /api/memories: {"data", "count", "next", "previous"}; the clients'
    iter_memories() follows the pages. A `filter` among `filters` is sent as its JSON text."""
    return Call("GET", "/api/memories", _json, params=_params({**filters, "page": page}))


# The user


def me() -> Call[Me]:
    return Call("GET", "/api/me", _json)


def erase_user(confirm: str) -> Call[None]:
    """POST /api/me/erase, confirmed with the user's id (the clients' erase_user() finds it)."""
    return Call("POST", "/api/me/erase", _nothing, json={"confirm": confirm})


# Conversations and extraction


def create_topic(title: str = "", **fields: Any) -> Call[Topic]:
    """A conversation to post messages to (`fields`: persona_id, project_id, channel_id)."""
    return Call("POST", "/api/topics", _json, json=_body({"title": title, **fields}))


def create_project(name: str) -> Call[Project]:
    return Call("POST", "/api/projects", _json, json={"name": name})


def add_messages(topic_id: str, messages: Iterable[Mapping[str, str]]) -> Call[MessagesPosted]:
    """Mirror a conversation's messages ({role, content}) for extraction; the answer's
    `extraction` says whether they started one."""
    body = {"messages": [dict(message) for message in messages]}
    return Call("POST", f"/api/topics/{_id(topic_id)}/messages", _json, json=body)


def extract(topic_id: str) -> Call[ExtractionRun]:
    """Ask for extraction of a conversation now (throttled per user: 429 is retried)."""
    return Call("POST", f"/api/memories/extract/{_id(topic_id)}", _json)


def extraction_run(task_id: str) -> Call[ExtractionRun]:
    return Call("GET", f"/api/extraction-runs/{_id(task_id)}", _json)


# Tools


def tools() -> Call[list[Tool]]:
    """The memory tools in OpenAI's function-calling format."""
    return Call("GET", "/api/tools", _data)


def call_tool(name: str, arguments: Any, **context: Any) -> Call[dict[str, Any]]:
    """Run a tool with a model's arguments (an object or its JSON string); `context`:
    topic_id, project_id, persona_id, work_session_id."""
    return Call("POST", f"/api/tools/{_id(name)}", _json, params=_params(context), json=arguments)


def profile() -> Call[Profile]:
    """Who the user is (GET /api/me/profile): pinned memories, current memories by category,
    entities by relation, and the summary written in the background."""
    return Call("GET", "/api/me/profile", _json)


def entities(kind: str | None = None, relation: str | None = None) -> Call[list[Entity]]:
    """The user's entities (people, pets, places, organisations), filtered by kind or
    relation (GET /api/entities; the first page of up to 100)."""
    params = _params({"kind": kind, "relation": relation, "page_size": 100})
    return Call("GET", "/api/entities", _data, params=params)


def entity(entity_id: str) -> Call[EntityDetail]:
    """One entity with its current memories (GET /api/entities/{id})."""
    return Call("GET", f"/api/entities/{_id(entity_id)}", _json)


def update_entity(entity_id: str, **fields: Any) -> Call[EntityDetail]:
    """Rename: name, aliases, relation or kind (PATCH /api/entities/{id})."""
    return Call("PATCH", f"/api/entities/{_id(entity_id)}", _json, json=dict(fields))


def merge_entities(entity_id: str, others: Iterable[str]) -> Call[EntityDetail]:
    """Merge `others` into the entity: it takes their memories and names (as aliases)."""
    body = {"entity_ids": [str(other) for other in others]}
    return Call("POST", f"/api/entities/{_id(entity_id)}/merge", _json, json=body)
