"""MemoryStore, the LangGraph store, and the requests each store operation makes."""

import json
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

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

from memory_client import calls
from memory_client.async_client import AsyncMemoryClient
from memory_client.client import MemoryClient
from memory_client.langgraph.filters import check_filter, matches, service_filter
from memory_client.langgraph.metadata import METADATA_KEY, metadata_of, same_json
from memory_client.langgraph.names import (
    NAMES_FIELD,
    PAGE_SIZE,
    READ_ONLY_SCOPES,
    Place,
    encode_value,
    is_plain,
    item_of,
    located,
    names_fit,
    read_memory,
)
from memory_client.types import Memory

R = TypeVar("R")

# A plan is the requests one operation needs, as a generator: it yields (end user, call) and
# is sent each call's result, so batch() and abatch() share it and differ only in sending.
Step = tuple[str, calls.Call[Any]]
Plan = Generator[Step, Any, R]

RECALL_TOP_K = 50  # the API's largest search


def _pages(user_id: str, filters: dict[str, Any]) -> Plan[list[Memory]]:
    memories: list[Memory] = []
    page = 1
    while True:
        answer = yield user_id, calls.list_page(filters, page)
        memories.extend(answer["data"])
        if not answer["next"]:
            return memories
        page += 1


def _held(place: Place, key: str) -> Plan[list[Memory]]:
    """The current memories that are this item: one, but a put of a name in another form
    than the one it was stored in before (an older adapter's) finds that one too."""
    wanted = (place.namespace, key)
    memories = yield from _pages(place.user_id, place.list_filters(exact=True))
    return [memory for memory in memories if located(memory) == wanted]


def _preferred(held: list[Memory]) -> Memory | None:
    def rank(memory: Memory) -> tuple[bool, str]:
        stored = read_memory(memory)
        return (stored is not None and stored.current_form, memory["updated_at"])

    return max(held, key=rank, default=None)


def _get(op: GetOp) -> Plan[Item | None]:
    memory = _preferred((yield from _held(Place.of(op.namespace), op.key)))
    return None if memory is None else item_of(memory)


def _put(op: PutOp) -> Plan[None]:
    place = Place.of(op.namespace)
    if place.scope in READ_ONLY_SCOPES:
        raise ValueError(
            "Topic namespaces hold extraction's session memories and are read only; "
            "put into (user_id, ...) or (user_id, 'project:<id>', ...)."
        )
    # A put of plain names replaces the key's memory through the service's own rule (a key
    # names one fact); other names may still have a memory in an older adapter's form,
    # under another key, which this put replaces by hand.
    plain = is_plain(place.path, op.key) and names_fit(place.path, op.key)
    held = [] if plain and op.value is not None else (yield from _held(place, op.key))
    if op.value is None:
        for memory in held:
            yield place.user_id, calls.delete(memory["id"])
        return None
    key = place.memory_key(op.key)
    value = dict(op.value)
    if names_fit(place.path, op.key):
        text = encode_value(value)
    else:
        names = {"namespace": list(place.path), "key": op.key}
        text = json.dumps({NAMES_FIELD: names, "value": value}, ensure_ascii=False)
    metadata = metadata_of(value)
    fields: dict[str, Any] = {"scope": place.scope, "category": place.category}
    fields.update(place.recall_context())
    saved = yield place.user_id, calls.save(key=key, value=text, metadata=metadata, **fields)
    if saved["key"] != key or saved["value"] != text or not _holds(saved, metadata):
        # The service found a current memory saying the same by its rules (case, spacing
        # and punctuation aside), and merged this save's metadata into that memory's: make
        # it say exactly this, its metadata["langgraph"] this value or none (PUT replaces
        # the metadata; a merge patch would keep a key the value no longer has).
        kept = {name: v for name, v in saved["metadata"].items() if name != METADATA_KEY}
        exactly = calls.update(
            saved["id"],
            key=key,
            value=text,
            category=place.category,
            metadata={**kept, **(metadata or {})},
            replace_metadata=True,
        )
        yield place.user_id, exactly
    replaced = {saved["id"], *saved["superseded_ids"]}
    for memory in held:
        if memory["id"] not in replaced:
            yield place.user_id, calls.delete(memory["id"])
    return None


def _holds(saved: Memory, metadata: dict[str, Any] | None) -> bool:
    """Whether a saved memory's metadata holds the item's value as `metadata` says: exactly
    (a save merged into a memory's metadata keeps keys the value does not have, and drops
    keys set to None), or not at all when the value does not fit in metadata."""
    held = saved["metadata"].get(METADATA_KEY, _ABSENT)
    wanted = _ABSENT if metadata is None else metadata[METADATA_KEY]
    return held is wanted or same_json(held, wanted)


_ABSENT = object()


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
    check_filter(op.filter)
    prefix = tuple(op.namespace_prefix)  # a list is a namespace too
    user_id = _user_of(prefix)
    place = Place.of(prefix)
    # The service narrows what is fetched (and ranked) to the items whose metadata may
    # match; matches decides, with LangGraph's semantics (filters.service_filter).
    narrowed = service_filter(op.filter)
    found: list[SearchItem] = []
    if op.query:
        ranked = {**place.recall_context(), "min_relevance": 0}
        hits = yield user_id, calls.search(op.query, RECALL_TOP_K, filter=narrowed, **ranked)
        candidates = [item_of(hit, hit["score"]) for hit in hits]
    else:
        filters = place.list_filters(exact=False)
        if narrowed is not None:
            filters["filter"] = narrowed
        memories = yield from _pages(user_id, filters)
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
        result: R = done.value
        return result
