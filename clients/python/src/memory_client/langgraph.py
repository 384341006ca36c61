"""A LangGraph store (langgraph.store.base.BaseStore) backed by the memory service, so a graph's
long-term memory is the service's: recalled with scores, reviewed, exported, erased with the
user. Needs the `langgraph` extra.

How a namespace maps to the service (README.md of this package, "The LangGraph store"):

- ``(user_id, *path)``: the end user `user_id` (sent as X-User-Id), user scope.
- ``(user_id, "project:<project id>", *path)``: that project's scope (a project of the user,
  made with MemoryClient.create_project); ``(user_id, "persona:<persona id>", *path)``: the
  user's memories with that persona (persona_user scope). ``(user_id, "topic:<topic id>",
  ...)`` names the session memories extraction draws from a conversation: read only.
- `path`, the labels after those, is the memory's `category` (joined with "."), and an item's
  `key` is the memory's key, prefixed by the category and "." when there is a path, so that
  equal keys of two paths are two facts. A memory saved otherwise (by hand, by extraction)
  whose key does not start with its category sits at the root of its scope, under its key.
- A value (a dict) is stored as its JSON text, except ``{"value": "<text>"}``, stored as the
  text itself; a memory whose value is not a JSON object reads back as ``{"value": text}``.
  So a get after a put answers the same dict, and memories written elsewhere read naturally.

The service's own rules apply: a key names one fact of a scope (keys are compared case-folded,
punctuation and underscores as spaces), values are at most 4000 characters, keys 200 and
categories 100. Every value is embedded (PutOp.index is not needed, and index=False is not
honoured); TTLs are not supported."""

import json
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        validate_op_namespace,
    )
except ImportError as missing:
    raise ImportError(
        "memory_client.langgraph needs LangGraph: pip install 'memory-service-client[langgraph]'"
    ) from missing

from memory_client import calls
from memory_client.async_client import AsyncMemoryClient
from memory_client.client import MemoryClient
from memory_client.types import Memory

R = TypeVar("R")

# A plan is the requests one operation needs, as a generator: it yields (end user, call) and
# is sent each call's result, so batch() and abatch() share it and differ only in sending.
Step = tuple[str, calls.Call[Any]]
Plan = Generator[Step, Any, R]

PAGE_SIZE = 200  # the API's largest page
RECALL_TOP_K = 50  # the API's largest search

# Namespace labels that name a carrier, after the user's id: label prefix -> scope, field.
CARRIER_LABELS = {
    "project": ("project", "project_id"),
    "persona": ("persona_user", "persona_id"),
    "topic": ("session", "topic_id"),
}
READ_ONLY_SCOPES = {"session"}


@dataclass(frozen=True)
class Place:
    """Where a namespace points in the service: the end user, the scope and its carrier,
    and the path kept in the memories' category."""

    user_id: str
    scope: str
    carrier: tuple[str, str] | None  # (field, id), e.g. ("project_id", "…")
    path: tuple[str, ...]

    @classmethod
    def of(cls, namespace: tuple[str, ...]) -> "Place":
        if not namespace:
            raise ValueError("A namespace starts with the end user's id: (user_id, ...).")
        user_id, rest = namespace[0], namespace[1:]
        if rest and rest[0].partition(":")[0] in CARRIER_LABELS and ":" in rest[0]:
            kind, _, carrier_id = rest[0].partition(":")
            scope, field = CARRIER_LABELS[kind]
            return cls(user_id, scope, (field, carrier_id), rest[1:])
        return cls(user_id, "user", None, rest)

    @property
    def namespace(self) -> tuple[str, ...]:
        return (self.user_id, *self.carrier_labels, *self.path)

    @property
    def carrier_labels(self) -> tuple[str, ...]:
        if self.carrier is None:
            return ()
        field, carrier_id = self.carrier
        kind = field.removesuffix("_id")
        return (f"{kind}:{carrier_id}",)

    @property
    def category(self) -> str:
        return ".".join(self.path)

    def memory_key(self, key: str) -> str:
        return f"{self.category}.{key}" if self.path else key

    def list_filters(self, *, exact: bool) -> dict[str, Any]:
        """GET /api/memories filters that hold this place's memories (`exact`: in this very
        namespace, else also in those below it); they may hold others too, which `located`
        sorts out."""
        filters: dict[str, Any] = {"page_size": PAGE_SIZE}
        if not exact and self.carrier is None and not self.path:
            return filters  # (user_id,): every namespace of the user
        filters["scope"] = self.scope
        if self.carrier is not None and self.carrier[0] != "topic_id":  # no such filter
            filters[self.carrier[0]] = self.carrier[1]
        if exact and self.path:
            filters["category"] = self.category
        return filters

    def recall_context(self) -> dict[str, Any]:
        """The search parameters that bring this place's scope into recall."""
        return dict([self.carrier]) if self.carrier is not None else {}


def located(memory: Memory) -> tuple[tuple[str, ...], str] | None:
    """The namespace and key a memory of the service has in the store; None for memories
    of no end user (persona scope, shared)."""
    user_id = memory["external_user_id"]
    if user_id is None or memory["scope"] == "persona":
        return None
    carrier: tuple[str, str] | None = None
    for field in ("project_id", "persona_id", "topic_id"):
        value = memory.get(field)
        if value:
            carrier = (field, str(value))
            break
    category, key = memory["category"], memory["key"]
    if category and key.startswith(category + "."):
        path, key = tuple(category.split(".")), key[len(category) + 1 :]
    else:
        path = ()
    place = Place(user_id, memory["scope"], carrier, path)
    return place.namespace, key


def encode_value(value: dict[str, Any]) -> str:
    text = value.get("value")
    if set(value) == {"value"} and isinstance(text, str) and _is_plain_text(text):
        return text
    return json.dumps(value, ensure_ascii=False)


def decode_value(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"value": text}
    return value if isinstance(value, dict) else {"value": text}


def _is_plain_text(text: str) -> bool:
    # Stored as it is only if it reads back as itself: the service trims values, and text
    # that is a JSON object would read back as that object.
    return bool(text) and text == text.strip() and decode_value(text) == {"value": text}


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def item_of(memory: Memory, score: float | None = None) -> SearchItem | None:
    where = located(memory)
    if where is None:
        return None
    namespace, key = where
    return SearchItem(
        namespace=namespace,
        key=key,
        value=decode_value(memory["value"]),
        created_at=_when(memory["created_at"]),
        updated_at=_when(memory["updated_at"]),
        score=score,
    )


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """SearchOp.filter on an item's value: equal fields, or {"$gt": ...} and the like."""
    for field, wanted in (conditions or {}).items():
        got = value.get(field)
        if isinstance(wanted, dict) and wanted and all(op in _COMPARISONS for op in wanted):
            try:
                if not all(_COMPARISONS[op](got, operand) for op, operand in wanted.items()):
                    return False
            except TypeError:  # values that do not compare, as a string and a number
                return False
        elif got != wanted:
            return False
    return True


def _pages(user_id: str, filters: dict[str, Any]) -> Plan[list[Memory]]:
    memories: list[Memory] = []
    page = 1
    while True:
        answer = yield user_id, calls.list_page(filters, page)
        memories.extend(answer["data"])
        if not answer["next"]:
            return memories
        page += 1


def _find(place: Place, key: str) -> Plan[Memory | None]:
    wanted = (place.namespace, key)
    for memory in (yield from _pages(place.user_id, place.list_filters(exact=True))):
        if located(memory) == wanted:
            return memory
    return None


def _get(op: GetOp) -> Plan[Item | None]:
    memory = yield from _find(Place.of(op.namespace), op.key)
    return None if memory is None else item_of(memory)


def _put(op: PutOp) -> Plan[None]:
    place = Place.of(op.namespace)
    if place.scope in READ_ONLY_SCOPES:
        raise ValueError(
            "Topic namespaces hold extraction's session memories and are read only; "
            "put into (user_id, ...) or (user_id, 'project:<id>', ...)."
        )
    if op.value is None:
        memory = yield from _find(place, op.key)
        if memory is not None:
            yield place.user_id, calls.delete(memory["id"])
        return None
    fields: dict[str, Any] = {"scope": place.scope, "category": place.category}
    fields.update(place.recall_context())
    value = encode_value(dict(op.value))
    yield place.user_id, calls.save(place.memory_key(op.key), value, fields)
    return None


def _user_of(prefix: tuple[str, ...]) -> str:
    if not prefix or prefix[0] == "*":
        raise ValueError(
            "This store's namespaces start with the end user's id: search and list within "
            "(user_id, ...)."
        )
    return prefix[0]


def _within(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


def _search(op: SearchOp) -> Plan[list[SearchItem]]:
    prefix = op.namespace_prefix
    user_id = _user_of(prefix)
    place = Place.of(prefix)
    found: list[SearchItem] = []
    if op.query:
        hits = yield user_id, calls.search(op.query, RECALL_TOP_K, place.recall_context())
        candidates = [item_of(hit, hit["score"]) for hit in hits]
    else:
        memories = yield from _pages(user_id, place.list_filters(exact=False))
        candidates = [item_of(memory) for memory in memories]
    for item in candidates:
        if item is not None and _within(item.namespace, prefix) and matches(item.value, op.filter):
            found.append(item)
    return found[op.offset : op.offset + op.limit]


def _fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(want == "*" or want == got for want, got in zip(path, part, strict=True))


def _list_namespaces(op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
    prefixes = [c.path for c in op.match_conditions or () if c.match_type == "prefix"]
    user_id = _user_of(tuple(prefixes[0]) if prefixes else ())
    memories = yield from _pages(user_id, {"page_size": PAGE_SIZE})
    namespaces: set[tuple[str, ...]] = set()
    for memory in memories:
        where = located(memory)
        if where is None:
            continue
        namespace = where[0]
        if all(_fits(namespace, condition) for condition in op.match_conditions or ()):
            namespaces.add(namespace[: op.max_depth] if op.max_depth else namespace)
    return sorted(namespaces)[op.offset : op.offset + op.limit]


def _plan(op: Op) -> Plan[Result]:
    validate_op_namespace(op)
    if isinstance(op, GetOp):
        return (yield from _get(op))
    if isinstance(op, PutOp):
        yield from _put(op)
        return None
    if isinstance(op, SearchOp):
        return (yield from _search(op))
    if isinstance(op, ListNamespacesOp):
        return (yield from _list_namespaces(op))
    raise TypeError(f"Unknown store operation {type(op).__name__}.")


class MemoryStore(BaseStore):
    """A LangGraph BaseStore whose items are the service's memories (the mapping in this
    module's docstring). `client` serves batch() (graph.invoke, store.get/put/...),
    `async_client` abatch() (graph.ainvoke, store.aget/aput/...); give the ones you use.
    Each acts for the user its namespace names, on the client's connection pool."""

    def __init__(
        self,
        client: MemoryClient | None = None,
        *,
        async_client: AsyncMemoryClient | None = None,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("Give a MemoryClient, an AsyncMemoryClient, or both.")
        self.client = client
        self.async_client = async_client

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise RuntimeError(
                "This MemoryStore has no MemoryClient: pass client=... for sync use."
            )
        client = self.client
        return [
            _drive(_plan(op), lambda user, call: client.with_user(user).run(call)) for op in ops
        ]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.async_client is None:
            raise RuntimeError(
                "This MemoryStore has no AsyncMemoryClient: pass async_client=... for async use."
            )
        results = []
        for op in ops:
            plan = _plan(op)
            try:
                user, call = next(plan)
                while True:
                    answer = await self.async_client.with_user(user).run(call)
                    user, call = plan.send(answer)
            except StopIteration as done:
                results.append(done.value)
        return results


def _drive(plan: Plan[R], send: Callable[[str, calls.Call[Any]], Any]) -> R:
    try:
        user, call = next(plan)
        while True:
            user, call = plan.send(send(user, call))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
