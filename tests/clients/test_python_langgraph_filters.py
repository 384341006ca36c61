"""The LangGraph store's filters on the service (memory_client.langgraph): a put keeps the
item's value in the memory's metadata["langgraph"] when it fits, and a search sends the part
of SearchOp.filter that has a sure equivalent in the service's filter language, then checks
every item fetched with LangGraph's semantics (matches). What this must never do is lose an
item LangGraph's InMemoryStore would find: checked here on generated values and filters,
against the service's reference evaluator (tests/filters_reference.py) without a service,
and end to end on a live one, with items of older adapters and values that do not fit in
metadata among them. Also LangGraph's own store suites' namespace cases (segment boundaries,
wildcard characters, case, suffixes, depth), within one end user's namespaces."""

import json
import random
from typing import Any

import httpx
import pytest
from langgraph.store.memory import InMemoryStore
from memory_client import MemoryClient
from memory_client.langgraph import (
    METADATA_KEY,
    MemoryStore,
    check_filter,
    matches,
    metadata_of,
    service_filter,
)

from memories.filters.language import filter_parse
from memories.models import Memory
from tests.clients.python_support import live_service
from tests.filters_reference import matches as service_matches

# --- Generated values and filters ------------------------------------------------------------

NAMES = ["a", "b", "font size", "123abc", "access-level", "$x"]
NESTED_NAMES = [name for name in NAMES if not name.startswith("$")]  # "$x" reads as an operator
NAMES_NOT_IN_METADATA = ["a.b", "12"]  # key names the service refuses in metadata
SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    2,
    -3,
    0.0,
    1.0,
    2.5,
    -1.5,
    2**53,
    2**53 + 1,
    2**53 + 3,
    10**20,
    "",
    "a",
    "A",
    "10",
    "2.5",
    " 3 ",
    "true",
    "x.y",
]
OPERANDS: list[Any] = [0, 1, 2, 2.5, -3, "2", "10", " 3 ", True, 2**53, 2**53 + 2, 1e300, "inf"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.2:
        return {name: _value(rng, depth + 1) for name in rng.sample(NAMES, rng.randint(0, 3))}
    if depth < 3 and roll < 0.3:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return rng.choice(SCALARS)


def _item(rng: random.Random) -> dict[str, Any]:
    names = rng.sample(NAMES, rng.randint(1, 4))
    if rng.random() < 0.15:
        names.append(rng.choice(NAMES_NOT_IN_METADATA))  # stored without metadata
    return {name: _value(rng) for name in names}


def _condition(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(SCALARS)
    if roll < 0.75:
        operators = rng.sample(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"], rng.randint(1, 2))
        return {
            operator: rng.choice(SCALARS if operator in ("$eq", "$ne") else OPERANDS)
            for operator in operators
        }
    if roll < 0.85 and depth < 2:
        names = rng.sample(NESTED_NAMES, rng.randint(0, 2))
        return {name: _condition(rng, depth + 1) for name in names}
    if roll < 0.92:
        return [rng.choice(SCALARS) for _ in range(rng.randint(0, 2))]
    return {"$eq": _value(rng)}


def _filter(rng: random.Random) -> dict[str, Any]:
    names = rng.sample(NAMES + NAMES_NOT_IN_METADATA, rng.randint(1, 3))
    return {name: _condition(rng) for name in names}


def test_the_service_filter_keeps_every_item_langgraph_matches():
    """No service: for generated items and filters, the service's filter (as the service's
    reference evaluator reads it, over the metadata a put writes) holds for every item that
    LangGraph's semantics match, and the service accepts it."""
    rng = random.Random(46)
    items = [_item(rng) for _ in range(120)]
    said = 0
    for _ in range(600):
        conditions = _filter(rng)
        check_filter(conditions)
        sent = service_filter(conditions)
        node = filter_parse(sent)  # raises if the service would refuse it
        if sent is not None:
            said += 1
            assert json.loads(json.dumps(sent)) == sent
        for value in items:
            if matches(value, conditions) and node is not None:
                memory = {"metadata": metadata_of(value) or {}}
                assert service_matches(node, memory), (value, conditions, sent)
    assert said > 400  # most filters say something to the service


def test_what_the_service_filter_says():
    path = f"metadata.{METADATA_KEY}"
    unstored = {path: {"exists": False}}
    assert service_filter(None) is None
    assert service_filter({"tags": ["p"]}) is None  # lists compare as lists: nothing to say
    assert service_filter({"a.b": 1, "x": None}) is None  # not a key name; None is missing too
    assert service_filter({"color": "red"}) == {"or": [unstored, {f"{path}.color": "red"}]}
    assert service_filter({"flag": True, "n": 3}) == {
        "or": [
            unstored,
            {"and": [{f"{path}.flag": {"in": [True, 1]}}, {f"{path}.n": 3}]},
        ]
    }
    assert service_filter({"meta": {"size": {"$gt": "1"}}}) == {
        "or": [
            unstored,
            {
                "or": [
                    {f"{path}.meta.size": {"gt": 1}},
                    {"not": {f"{path}.meta.size": {"gte": -(2**53), "lte": 2**53}}},
                ]
            },
        ]
    }
    # The service's limits: conditions past 50 are left out, not refused.
    many = service_filter({f"k{n}": n + 2 for n in range(80)})
    assert many is not None
    assert len(many["or"][1]["and"]) == 49
    assert filter_parse(many) is not None


def test_metadata_holds_the_value_when_it_fits():
    assert metadata_of({"theme": "dark", "font size": 14}) == {
        METADATA_KEY: {"theme": "dark", "font size": 14}
    }
    assert metadata_of({"a": {"b": {"c": {"d": 1}}}}) is not None  # 5 levels with metadata's
    assert metadata_of({"a": {"b": {"c": {"d": {"e": 1}}}}}) is None
    assert metadata_of({"a.b": 1}) is None
    assert metadata_of({"nested": {"12": 1}}) is None
    assert metadata_of({"x": float("nan")}) is None
    assert metadata_of({"x": "\x00"}) is None
    assert metadata_of({"x": "日" * 2800}) is None  # over 8192 bytes of UTF-8
    assert metadata_of({"x": "a" * 8000}) is not None


# --- Against a live service ------------------------------------------------------------------


@pytest.fixture
def service(transactional_db, live_server):
    return live_service(live_server)


class Sent:
    """The query strings a client sent, for the filters in them."""

    def __init__(self) -> None:
        self.filters: list[Any] = []

    def __call__(self, request: httpx.Request) -> None:
        text = request.url.params.get("filter")
        self.filters.append(None if text is None else json.loads(text))


def recording_client(service, sent: Sent) -> MemoryClient:
    http = httpx.Client(timeout=30, event_hooks={"request": [sent]})
    return MemoryClient(service.url, api_key=service.key, http_client=http)


def test_a_put_writes_the_value_into_metadata_exactly_or_not_at_all(service):
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        store.put(("alice", "p"), "settings", {"theme": "dark", "font size": 14})
        store.put(("alice", "p"), "dotted", {"a.b": 1})
        store.put(("alice", "p"), "long", {"x": "日" * 2800})
        # The same words to the service (punctuation as spaces): one memory, put again.
        store.put(("alice", "p"), "same", {"a b": 1})
        store.put(("alice", "p"), "same", {"a_b": 1})
        same_after_merge = Memory.objects.get(key="p.same", deleted_at__isnull=True).metadata
        store.put(("alice", "p"), "same", {"a.b": 1})
        same_unfit = Memory.objects.get(key="p.same", deleted_at__isnull=True).metadata
        # A save merges metadata, and a merge patch drops a key set to null: put twice.
        store.put(("alice", "p"), "nulls", {"a": None, "b": 1})
        store.put(("alice", "p"), "nulls", {"a": None, "b": 1})
        # The product's own metadata keys on the memory stay.
        Memory.objects.filter(key="p.settings").update(
            metadata={METADATA_KEY: {"theme": "dark", "font size": 14}, "app": "ios"}
        )
        store.put(("alice", "p"), "settings", {"theme": "Dark", "font size": 14})

        got = {key: store.get(("alice", "p"), key).value for key in ("same", "nulls")}

    def metadata(key):
        return Memory.objects.get(key=key, status="active", deleted_at__isnull=True).metadata

    assert metadata("p.settings") == {
        METADATA_KEY: {"theme": "Dark", "font size": 14},
        "app": "ios",
    }
    assert metadata("p.dotted") == {}
    assert metadata("p.long") == {}
    assert same_after_merge == {METADATA_KEY: {"a_b": 1}}
    assert same_unfit == {}
    assert metadata("p.nulls") == {METADATA_KEY: {"a": None, "b": 1}}
    assert got == {"same": {"a.b": 1}, "nulls": {"a": None, "b": 1}}


def _put_every_way(store: MemoryStore, alice: MemoryClient, items: dict[str, dict]) -> None:
    """Half the items put by the store, half saved as the adapter before metadata saved
    them (the value's JSON text under the joined key, no metadata)."""
    for number, (key, value) in enumerate(items.items()):
        if number % 2:
            alice.save(key=f"f.{key}", value=json.dumps(value), category="f")
        else:
            store.put(("alice", "f"), key, value)


def test_a_search_filter_finds_what_langgraph_finds_on_the_service(service):
    rng = random.Random(4646)
    items = {f"i{n}": _item(rng) for n in range(40)}
    sent = Sent()
    with recording_client(service, sent) as client:
        store = MemoryStore(client)
        _put_every_way(store, client.with_user("alice"), items)
        stored = Memory.objects.exclude(metadata={}).count()

        sent.filters.clear()
        for _ in range(120):
            conditions = _filter(rng)
            hits = store.search(("alice", "f"), filter=conditions, limit=100)
            found = sorted(item.key for item in hits)
            expected = sorted(key for key, value in items.items() if matches(value, conditions))
            assert found == expected, conditions

        # A query too: recall among what the filter lets through, then LangGraph's check.
        for _ in range(10):
            conditions = _filter(rng)
            found = store.search(("alice", "f"), query="a", filter=conditions, limit=50)
            expected = sorted(key for key, value in items.items() if matches(value, conditions))
            assert sorted(item.key for item in found) == expected, conditions

    assert 10 < stored < 40  # some put with metadata, and the older ones without
    assert sum(1 for sent_filter in sent.filters if sent_filter is not None) > 80


def test_filters_of_langgraphs_store_suites(service):
    """The filter cases of LangGraph's SQLite and PostgreSQL store tests (values with
    quotes, keys with hyphens and digits, numbers and booleans), compared with InMemoryStore."""
    items = {
        "doc1": {"access": "public", "title": "Public Document", "price": 10, "active": True},
        "doc2": {"access": "private", "title": "Private Document", "price": 20, "active": False},
        "doc3": {"access": "secret", "title": "O'Brien's Document", "price": 30},
        "doc4": {"access-level": "public", "user": {"access-level": "nested"}, "price": -10},
        "doc5": {"123abc": "ok", "user": {"123abc": "ok2"}, "price": "15"},
        "doc6": {"author": "John Doe", "tags": ["draft"], "price": 2.5, "active": 1},
    }
    filters = [
        {"access": "public"},
        {"access": "public' OR '1'='1"},
        {"access": "public'; --"},
        {"access": "''''"},
        {"title": "O'Brien's Document"},
        {"access": "public' OR 'א'='א"},
        {"price": {"$gt": 15}},
        {"price": {"$lt": float("inf")}},
        {"price": {"$gt": float("-inf")}},
        {"price": {"$eq": float("nan")}},
        {"price": {"$lt": 10**100}},
        {"price": {"$lt": 0}},
        {"active": True},
        {"active": False},
        {"access-level": "public"},
        {"user": {"access-level": "nested"}},
        {"123abc": "ok"},
        {"user": {"123abc": "ok2"}},
        {"tags": ["draft"]},
        {"author": "John Doe", "price": {"$gte": 2.5, "$lte": "2.5"}},
    ]
    reference = InMemoryStore()
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        for key, value in items.items():
            store.put(("docs", "d"), key, value)
            reference.put(("docs", "d"), key, value)

        for conditions in filters:
            found = sorted(item.key for item in store.search(("docs",), filter=conditions))
            ours = sorted(key for key, value in items.items() if matches(value, conditions))
            assert found == ours, conditions
            try:
                theirs = sorted(item.key for item in reference.search(("docs",), filter=conditions))
            except (TypeError, ValueError):  # InMemoryStore raises on an item it cannot compare
                continue
            assert found == theirs, conditions


# --- Namespaces, as LangGraph's store suites test them ----------------------------------------


def _namespaces(store: MemoryStore, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {item.namespace for item in store.search(prefix, limit=100)}


def test_search_stops_at_namespace_labels_and_reads_them_literally(service):
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        for path in [
            ("foo",),
            ("foo", "child"),
            ("foo", "child", "deep"),
            ("foobar",),
            ("foobar", "baz"),
            ("foo2",),
            ("user_1",),
            ("user_1", "child"),
            ("userX1",),
            ("a%b",),
            ("axxb",),
            ("star*",),
            ("starX",),
            ("Foo",),
            ("users", "alice"),
            ("users", "alice\n"),
        ]:
            store.put(("u", *path), "k", {"v": 1})

        assert _namespaces(store, ("u", "foo")) == {
            ("u", "foo"),
            ("u", "foo", "child"),
            ("u", "foo", "child", "deep"),
        }
        assert _namespaces(store, ("u", "foobar")) == {("u", "foobar"), ("u", "foobar", "baz")}
        assert _namespaces(store, ("u", "foo2")) == {("u", "foo2")}
        assert _namespaces(store, ("u", "fo")) == set()
        assert _namespaces(store, ("u", "user_1")) == {("u", "user_1"), ("u", "user_1", "child")}
        assert _namespaces(store, ("u", "a%b")) == {("u", "a%b")}
        assert _namespaces(store, ("u", "star*")) == {("u", "star*")}
        assert _namespaces(store, ("u", "Foo")) == {("u", "Foo")}
        assert _namespaces(store, ("u", "users", "alice")) == {("u", "users", "alice")}
        assert len(_namespaces(store, ("u",))) == 16


def test_list_namespaces_by_prefix_suffix_wildcard_depth_and_page(service):
    user = "lister"
    paths = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "some", "nesting", "public"),
        ("prod", "documents", "private"),
        ("users", "alice"),
        ("users", "malice"),
        ("users", "alice\n"),
        ("star*", "child"),
        ("starX",),
    ]
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        for path in paths:
            store.put((user, *path), "dummy", {"content": "dummy"})

        def listed(**conditions) -> set[tuple[str, ...]]:
            return {ns[1:] for ns in store.list_namespaces(**conditions, limit=100)}

        assert listed(prefix=(user, "test")) == set(paths[:4])
        assert listed(prefix=(user, "test", "documents")) == set(paths[:2])
        assert listed(prefix=(user,), suffix=("public",)) == {
            paths[0],
            paths[2],
            paths[4],
            paths[5],
        }
        assert listed(prefix=(user, "test"), suffix=("public",)) == {paths[0], paths[2]}
        assert listed(prefix=(user, "*", "documents")) == set(paths[:2]) | set(paths[4:7])
        assert listed(prefix=(user,), suffix=("some", "*", "public")) == {paths[5]}
        assert listed(prefix=(user,), suffix=("alice",)) == {("users", "alice")}
        assert listed(prefix=(user, "users", "alice")) == {("users", "alice")}
        assert listed(prefix=(user, "star*")) == {("star*", "child")}
        assert listed(prefix=(user,), max_depth=3) == {
            ("test", "documents"),
            ("test", "images"),
            ("prod", "documents"),
            ("users", "alice"),
            ("users", "malice"),
            ("users", "alice\n"),
            ("star*", "child"),
            ("starX",),
        }
        every = store.list_namespaces(prefix=(user,), limit=100)
        assert len(every) == len(paths)
        assert store.list_namespaces(prefix=(user,), limit=3) == every[:3]
        assert store.list_namespaces(prefix=(user,), offset=3, limit=100) == every[3:]
        assert store.list_namespaces(prefix=("nobody",)) == []
