"""A LangGraph store (langgraph.store.base.BaseStore) backed by the memory service, so a graph's
long-term memory is the service's: recalled with scores, reviewed, exported, erased with the
user. Needs the `langgraph` extra.

How a namespace maps to the service (README.md of this package, "The LangGraph store"):

- ``(user_id, *path)``: the end user `user_id` (sent as X-User-Id), user scope.
- ``(user_id, "project:<project id>", *path)``: that project's scope (a project of the user,
  made with MemoryClient.create_project); ``(user_id, "persona:<persona id>", *path)``: the
  user's memories with that persona (persona_user scope). ``(user_id, "topic:<topic id>",
  ...)`` names the session memories extraction draws from a conversation: read only.
- `path`, the labels after those, is the memory's `category` (joined with "."). Every
  distinct namespace and key is its own memory and reads back exactly: plain names (lowercase
  ASCII letters and digits) are stored as the path and key joined with "." ("profile.diet"),
  any other name escaped and tagged with a digest of the exact names ("Profile.Diet #…"),
  which the service's key comparison (case folded, punctuation as spaces) keeps apart; see
  memory_key_of. A memory saved otherwise (by hand, by extraction) whose key does not start
  with its category sits at the root of its scope, under its key.
- A value (a dict) is stored as its JSON text, except ``{"value": "<text>"}``, stored as the
  text itself; a memory whose value is not a JSON object reads back as ``{"value": text}``.
  So a get after a put answers the same dict, and memories written elsewhere read naturally.
- `filter` reads as LangGraph's InMemoryStore reads it (see matches).
- A search with a query ranks the namespace's memories by the service's score, as
  InMemoryStore ranks every item by similarity: it asks with ``min_relevance=0`` (the best 50
  whatever the relevance gate says), so ``search(ns, query="food")`` finds a memory its words
  stand in, and a weak one still comes last rather than not at all.

Values are at most 4000 characters. Every value is embedded (PutOp.index is not needed, and
index=False is not honoured); TTLs are not supported."""

import base64
import hashlib
import json
import math
import re
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import unquote

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
        user_id, rest = namespace[0], tuple(namespace[1:])  # a list is a namespace too
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
        """The memories' category: the path joined with "." (no label holds one), shown in
        the review pages and filtered on to list the namespace; not read back (the key is)."""
        return _category_of(self.path)

    def memory_key(self, key: str) -> str:
        return memory_key_of(self.path, key)

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


# A stored key and its names, both ways (README.md, "How keys are stored"): names made of
# lowercase ASCII letters and digits are stored as they are, path and key joined with "."
# ("profile.diet"), which the service's key normalisation leaves one to one. Any other name
# is escaped and tagged: "Profile.Diet #<tag>", the tag a 128-bit digest of the exact path
# and key in lowercase base32, so the service (which compares keys case-folded, punctuation
# as spaces) keeps every such item its own fact, and the names read back exactly.
PLAIN_NAME = re.compile(r"[a-z0-9]+")
TAGGED_KEY = re.compile(r"(?:(.*) )?#([a-z2-7]{26})")
KEY_MAX_LENGTH = 200  # the service's
CATEGORY_MAX_LENGTH = 100
# The value of an item whose escaped names do not fit in a key: the names and the value.
NAMES_FIELD = "langgraph_item"


def _tag(path: tuple[str, ...], key: str) -> str:
    names = json.dumps([list(path), key], ensure_ascii=False).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(names, digest_size=16).digest()
    return base64.b32encode(digest).decode().rstrip("=").lower()


def _escape(name: str, also: str = "") -> str:
    """`name` with no whitespace but " ", no unprintable character, no "%" (nor those of
    `also`): each such character as %XX of its UTF-8 bytes, so unquote gives it back."""
    return "".join(
        char
        if char.isprintable() and char not in "%" + also
        else "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        for char in name
    )


def _category_of(path: tuple[str, ...]) -> str:
    # Read by people and filtered on, never read back: unprintable characters, which the
    # service may refuse, escaped; cut to the service's length.
    joined = ".".join(path)
    return "".join(_escape(char) if not char.isprintable() else char for char in joined)[
        :CATEGORY_MAX_LENGTH
    ]


def _is_plain(path: tuple[str, ...], key: str) -> bool:
    return all(PLAIN_NAME.fullmatch(name) for name in (*path, key))


def memory_key_of(path: tuple[str, ...], key: str) -> str:
    """The memory key an item is stored under (see above); when the escaped names do not fit
    in a key, a cut of them, with the tag (the names then travel in the value)."""
    if _is_plain(path, key):
        joined = ".".join((*path, key))
        if len(joined) <= KEY_MAX_LENGTH and len(_category_of(path)) == len(".".join(path)):
            return joined
    escaped = ".".join(_escape(name, also=".") for name in (*path, key))
    if escaped.startswith(" "):  # the service trims keys; inner spaces stay
        escaped = "%20" + escaped[1:]
    tagged = f"{escaped} #{_tag(path, key)}"
    if len(tagged) <= KEY_MAX_LENGTH:
        return tagged
    return f"{escaped[: KEY_MAX_LENGTH - 30].rstrip('%')}… #{_tag(path, key)}"


def names_fit(path: tuple[str, ...], key: str) -> bool:
    return not memory_key_of(path, key).endswith(f"… #{_tag(path, key)}")


@dataclass(frozen=True)
class Stored:
    """A memory as the store reads it: its place in the store, its value, and whether it is
    in the form a put writes now (not an older adapter's, nor a memory saved elsewhere)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    current_form: bool


def read_memory(memory: Memory) -> Stored | None:
    """The item a memory of the service is; None for memories of no end user (persona
    scope, shared)."""
    user_id = memory["external_user_id"]
    if user_id is None or memory["scope"] == "persona":
        return None
    carrier: tuple[str, str] | None = None
    for field in ("project_id", "persona_id", "topic_id"):
        value = memory.get(field)
        if value:
            carrier = (field, str(value))
            break
    stored_key, text = memory["key"], memory["value"]
    path, key, value, current = _read_names(stored_key, memory["category"], text)
    place = Place(user_id, memory["scope"], carrier, path)
    return Stored(place.namespace, key, value, current)


def _read_names(
    stored_key: str, category: str, text: str
) -> tuple[tuple[str, ...], str, dict[str, Any], bool]:
    tagged = TAGGED_KEY.fullmatch(stored_key)
    if tagged is not None:
        escaped, tag = tagged.group(1) or "", tagged.group(2)
        *labels, last = [unquote(name) for name in escaped.split(".")]
        if _tag(tuple(labels), last) == tag:
            return tuple(labels), last, decode_value(text), True
        carried = _carried_names(text, tag)
        if carried is not None:
            return carried
    # Plain names ("profile.diet" of category "profile"), an older adapter's item
    # ("Profile.Diet" of category "Profile"), or a memory saved otherwise, whose key does not
    # start with its category: at the root of its scope, under its key.
    path: tuple[str, ...] = ()
    key = stored_key
    if category and stored_key.startswith(category + "."):
        path, key = tuple(category.split(".")), stored_key[len(category) + 1 :]
    current = _is_plain(path, key) and memory_key_of(path, key) == stored_key
    return path, key, decode_value(text), current


def _carried_names(text: str, tag: str) -> tuple[tuple[str, ...], str, dict[str, Any], bool] | None:
    """The names and value an item with names too long for a key carries in its value."""
    carried = decode_value(text)
    names = carried.get(NAMES_FIELD)
    if set(carried) != {NAMES_FIELD, "value"} or not isinstance(names, dict):
        return None
    path, key, value = names.get("namespace"), names.get("key"), carried["value"]
    if not (isinstance(path, list) and all(isinstance(label, str) for label in path)):
        return None
    if not isinstance(key, str) or not isinstance(value, dict) or _tag(tuple(path), key) != tag:
        return None
    return tuple(path), key, value, True


def located(memory: Memory) -> tuple[tuple[str, ...], str] | None:
    """The namespace and key a memory of the service has in the store."""
    stored = read_memory(memory)
    return None if stored is None else (stored.namespace, stored.key)


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
    stored = read_memory(memory)
    if stored is None:
        return None
    return SearchItem(
        namespace=stored.namespace,
        key=stored.key,
        value=stored.value,
        created_at=_when(memory["created_at"]),
        updated_at=_when(memory["updated_at"]),
        score=score,
    )


# SearchOp.filter as LangGraph's InMemoryStore reads it (langgraph.store.memory,
# _compare_values and _apply_operator): a plain value is equality, a nested dict matches the
# fields it names (the item's dict may have more), a list matches a list of as many items
# matching one by one; a dict with any "$" key is operators, all of which must hold, and an
# unknown one is a ValueError. $gt, $gte, $lt and $lte compare as numbers (float() of both
# sides, so "10" > 9). Where InMemoryStore raises while reading an item's field (a field
# missing, None or not a number under $gt), the item does not match, as in LangGraph's
# SQLite and PostgreSQL stores: memories saved elsewhere read as {"value": text}, and one of
# them must not fail every search. An operand that is no number raises ValueError at once.
_ORDERINGS: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
_OPERATORS = {"$eq", "$ne", *_ORDERINGS}


def check_filter(conditions: Any) -> None:
    """Raise ValueError for an operator LangGraph's stores do not know, or a comparison
    with something that is not a number, wherever it sits in the filter."""
    if isinstance(conditions, dict):
        if any(name.startswith("$") for name in conditions):
            for name, operand in conditions.items():
                if name not in _OPERATORS:
                    raise ValueError(f"Unsupported operator: {name}")
                if name in _ORDERINGS and _number(operand) is None:
                    raise ValueError(f"{name} compares numbers; got {operand!r}.")
            return
        for wanted in conditions.values():
            check_filter(wanted)
    elif isinstance(conditions, list | tuple):
        for wanted in conditions:
            check_filter(wanted)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _compare(got: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(name.startswith("$") for name in wanted):
            return all(_apply(got, name, operand) for name, operand in wanted.items())
        if not isinstance(got, dict):
            return False
        return all(_compare(got.get(name), value) for name, value in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(got, list | tuple)
            and len(got) == len(wanted)
            and all(_compare(one, other) for one, other in zip(got, wanted, strict=True))
        )
    return bool(got == wanted)


def _apply(got: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(got == operand)
    if operator == "$ne":
        return bool(got != operand)
    number, bound = _number(got), _number(operand)
    if number is None or bound is None or math.isnan(number):
        return False
    return _ORDERINGS[operator](number, bound)


def matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """Whether an item's value passes SearchOp.filter (check_filter it first)."""
    return all(_compare(value.get(name), wanted) for name, wanted in (conditions or {}).items())


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
    plain = _is_plain(place.path, op.key) and names_fit(place.path, op.key)
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
    fields: dict[str, Any] = {"scope": place.scope, "category": place.category}
    fields.update(place.recall_context())
    saved = yield place.user_id, calls.save(key=key, value=text, **fields)
    if saved["key"] != key or saved["value"] != text:
        # The service found a current memory saying the same by its rules (case, spacing
        # and punctuation aside): make it say exactly this.
        changes = {"key": key, "value": text, "category": place.category}
        yield place.user_id, calls.update(saved["id"], **changes)
    replaced = {saved["id"], *saved["superseded_ids"]}
    for memory in held:
        if memory["id"] not in replaced:
            yield place.user_id, calls.delete(memory["id"])
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
    check_filter(op.filter)
    prefix = tuple(op.namespace_prefix)  # a list is a namespace too
    user_id = _user_of(prefix)
    place = Place.of(prefix)
    found: list[SearchItem] = []
    if op.query:
        ranked = {**place.recall_context(), "min_relevance": 0}
        hits = yield user_id, calls.search(op.query, RECALL_TOP_K, **ranked)
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
