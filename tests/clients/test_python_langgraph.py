"""The LangGraph store of the Python client (memory_client.langgraph.MemoryStore) inside real
LangGraph graphs, against a live service: put, get, search and delete round trips from a
node that uses the injected store, and what the service holds afterwards."""

import asyncio
import json
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from memory_client.langgraph import MemoryStore

from memories.models import Memory
from tests.clients.python_support import live_service


@pytest.fixture
def service(transactional_db, live_server):
    return live_service(live_server)


class State(TypedDict):
    user_id: str
    seen: dict[str, Any]


def graph_of(node, store: BaseStore):
    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    return graph.compile(store=store)


def round_trip(state: State, *, store: BaseStore) -> dict:
    profile = (state["user_id"], "profile")
    store.put(profile, "settings", {"theme": "dark", "font size": 14})
    store.put(profile, "diet", {"value": "Vegetarian, no fish"})
    store.put((state["user_id"], "pets"), "settings", {"theme": "light"})
    seen: dict[str, Any] = {
        "settings": store.get(profile, "settings").value,
        "diet": store.get(profile, "diet").value,
        "pets": store.get((state["user_id"], "pets"), "settings").value,
        "search": [
            (item.key, item.score is not None)
            for item in store.search(profile, query="is the user vegetarian")
        ],
        "filtered": [item.key for item in store.search(profile, filter={"font size": {"$gt": 12}})],
        "namespaces": store.list_namespaces(prefix=(state["user_id"],)),
    }
    store.put(profile, "settings", {"theme": "light", "font size": 16})
    seen["replaced"] = store.get(profile, "settings").value
    store.delete(profile, "diet")
    seen["deleted"] = store.get(profile, "diet")
    seen["left"] = sorted(item.key for item in store.search((state["user_id"],)))
    return {"seen": seen}


def test_put_get_search_and_delete_round_trip_inside_a_graph(service):
    with service.client(user_id=None) as client:
        app = graph_of(round_trip, MemoryStore(client))

        seen = app.invoke({"user_id": "alice", "seen": {}})["seen"]

    assert seen["settings"] == {"theme": "dark", "font size": 14}
    assert seen["diet"] == {"value": "Vegetarian, no fish"}
    assert seen["pets"] == {"theme": "light"}
    assert seen["search"][0] == ("diet", True)  # recall, scored
    assert seen["filtered"] == ["settings"]
    assert seen["namespaces"] == [("alice", "pets"), ("alice", "profile")]
    assert seen["replaced"] == {"theme": "light", "font size": 16}
    assert seen["deleted"] is None
    assert seen["left"] == ["settings", "settings"]  # profile's and pets'

    current = Memory.objects.filter(status="active", deleted_at__isnull=True)
    rows = {(m.user.external_id, m.category, m.key): m.value for m in current}
    assert rows == {
        ("alice", "profile", "profile.settings"): json.dumps({"theme": "light", "font size": 16}),
        ("alice", "pets", "pets.settings"): json.dumps({"theme": "light"}),
    }
    assert Memory.objects.get(key="profile.diet").deleted_at is not None


def test_memories_saved_elsewhere_read_as_items_and_a_project_is_a_namespace(service):
    with service.client("bob") as bob:
        bob.save(key="home", value="Lives in Porto")
        project_id = bob.create_project("garden")["id"]
        store = MemoryStore(bob)
        project = ("bob", f"project:{project_id}")

        store.put(project, "soil", {"value": "Clay, needs compost"})
        home = store.get(("bob",), "home")
        soil = store.get(project, "soil")
        found = store.search(project, query="what soil is in the garden")
        everywhere = store.list_namespaces(prefix=("bob",))

    assert home.value == {"value": "Lives in Porto"}
    assert soil.value == {"value": "Clay, needs compost"}
    assert found[0].key == "soil" and found[0].namespace == project
    assert everywhere == [("bob",), project]
    saved = Memory.objects.get(key="soil")
    assert (saved.scope, str(saved.project_id)) == ("project", project_id)


def test_a_search_ranks_every_item_as_the_in_memory_store_does(service):
    """InMemoryStore ranks every item by similarity; so does this store (min_relevance=0):
    a search box's word finds the item it stands in first, and a query no item bears on
    still lists the items, weakest last, rather than none."""
    with service.client("dana") as dana:
        store = MemoryStore(dana)
        namespace = ("dana", "notes")
        store.put(namespace, "music", {"value": "Loves 1970s jazz fusion"})
        store.put(namespace, "home", {"value": "Lives in Porto"})
        store.put(namespace, "stack", {"value": "Prefers Django and PostgreSQL"})

        by_word = store.search(namespace, query="jazz")
        unrelated = store.search(namespace, query="capital of peru")
        first_two = store.search(namespace, query="capital of peru", limit=2)

    assert by_word[0].key == "music"
    assert sorted(item.key for item in unrelated) == ["home", "music", "stack"]
    assert [item.score for item in unrelated] == sorted(
        (item.score for item in unrelated), reverse=True
    )
    assert [item.key for item in first_two] == [item.key for item in unrelated[:2]]


def test_the_store_serves_async_graphs(service):
    async def remember(state: State, *, store: BaseStore) -> dict:
        namespace = (state["user_id"], "notes")
        await store.aput(namespace, "n1", {"text": "Prefers trains to planes", "n": 1})
        item = await store.aget(namespace, "n1")
        hits = await store.asearch(namespace, query="does the user prefer trains or planes")
        await store.adelete(namespace, "n1")
        return {
            "seen": {
                "got": item.value,
                "hits": [hit.key for hit in hits],
                "gone": await store.aget(namespace, "n1"),
            }
        }

    async def scenario():
        async with service.async_client(user_id=None) as client:
            app = graph_of(remember, MemoryStore(async_client=client))
            return (await app.ainvoke({"user_id": "carol", "seen": {}}))["seen"]

    seen = asyncio.run(scenario())

    assert seen == {
        "got": {"text": "Prefers trains to planes", "n": 1},
        "hits": ["n1"],
        "gone": None,
    }


def test_a_namespace_that_names_no_user_is_refused(service):
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        with pytest.raises(ValueError, match="end user's id"):
            store.search(())
        with pytest.raises(ValueError, match="read only"):
            store.put(("alice", "topic:0b6f0c8e-3c36-4a51-9a3c-5b1f6a1e0b11"), "k", {"a": 1})


# Names the service would fold into one key (case, punctuation, spacing, unicode forms), a
# dotted key beside the namespace it reads like, and names too long for a key or a category.
DISTINCT_ITEMS = [
    (("alice", "profile"), "diet"),
    (("alice", "Profile"), "diet"),
    (("alice", "PROFILE"), "Diet"),
    (("alice",), "profile.diet"),
    (("alice",), "profile diet"),
    (("alice",), "profile_diet"),
    (("alice", "profile", "diet"), "x"),
    (("alice", "profile"), "diet.x"),
    (("alice", "a-b"), "k"),
    (("alice", "a_b"), "k"),
    (("alice", "a b"), "k"),
    (("alice", "a/b"), "k"),
    (("alice", "a\tb"), "k"),
    (("alice", "a\u00a0b"), "k"),
    (("alice", "a  b"), "k"),
    (("alice", "a", "b"), "k"),
    (("alice", "café"), "k"),
    (("alice", "cafe\u0301"), "k"),  # the same word decomposed
    (("alice", "cafe"), "k"),
    (("alice", "日本"), "設定"),
    (("alice",), " padded "),
    (("alice",), "padded "),
    (("alice",), ""),
    (("alice",), "padded"),
    (("alice",), "100%"),
    (("alice",), "100"),
    (("alice",), "x #aaaaaaaaaaaaaaaaaaaaaaaaaa"),
    (("alice", "l" * 150), "k"),
    (("alice", "l" * 151), "k"),
    (("alice",), "k" * 300),
    (("alice",), "k" * 301),
    (("Alice", "profile"), "diet"),
]


def test_every_distinct_namespace_and_key_is_its_own_item_and_reads_back_exactly(service):
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        for number, (namespace, key) in enumerate(DISTINCT_ITEMS):
            store.put(namespace, key, {"n": number})
        # The same value in two names the service would fold: still two items.
        store.put(("alice", "Same"), "k", {"value": "Same words"})
        store.put(("alice", "same"), "k", {"value": "Same words"})

        got = {(ns, key): store.get(ns, key) for ns, key in DISTINCT_ITEMS}
        listed = store.search(("alice",), limit=100) + store.search(("Alice",), limit=100)
        namespaces = store.list_namespaces(prefix=("alice",), limit=100)
        same = [store.get(("alice", "Same"), "k"), store.get(("alice", "same"), "k")]

    for number, (namespace, key) in enumerate(DISTINCT_ITEMS):
        item = got[(namespace, key)]
        assert (item.namespace, item.key, item.value) == (namespace, key, {"n": number})
    assert sorted((item.namespace, item.key) for item in listed if "n" in item.value) == sorted(
        DISTINCT_ITEMS
    )
    expected = {namespace for namespace, _ in DISTINCT_ITEMS if namespace[0] == "alice"}
    assert set(namespaces) == expected | {("alice", "Same"), ("alice", "same")}
    assert [item.value for item in same] == [{"value": "Same words"}] * 2
    current = Memory.objects.filter(status="active", deleted_at__isnull=True)
    assert current.count() == len(DISTINCT_ITEMS) + 2


def test_plain_names_keep_their_readable_keys_and_others_are_tagged(service):
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        store.put(("alice", "profile"), "diet", {"value": "Vegetarian"})
        store.put(("alice", "Profile"), "Diet", {"value": "Vegan"})
        store.put(("alice",), "profile.diet", {"value": "Pescatarian"})

    keys = dict(Memory.objects.values_list("value", "key"))
    assert keys["Vegetarian"] == "profile.diet"
    assert keys["Vegan"].startswith("Profile.Diet #")
    assert keys["Pescatarian"].startswith("profile%2Ediet #")
    assert len({Memory.objects.get(key=key).key_normalised for key in keys.values()}) == 3


def test_a_put_replaces_its_own_item_exactly_and_nothing_else(service):
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        store.put(("alice", "Profile"), "Diet", {"a": "Vegan"})
        store.put(("alice", "profile"), "diet", {"a": "Vegan"})
        store.put(("alice", "Profile"), "Diet", {"a": "vegan"})  # the same words to the service
        store.put(("alice", "profile"), "diet", {"a": 1})
        store.put(("alice", "profile"), "diet", {"a": "1"})  # also the same words

        upper = store.get(("alice", "Profile"), "Diet")
        lower = store.get(("alice", "profile"), "diet")
        store.delete(("alice", "Profile"), "Diet")
        gone = store.get(("alice", "Profile"), "Diet")
        kept = store.get(("alice", "profile"), "diet")

    assert upper.value == {"a": "vegan"}
    assert lower.value == {"a": "1"}
    assert gone is None
    assert kept.value == {"a": "1"}


def test_items_an_older_adapter_stored_read_back_and_a_put_replaces_them(service):
    # What the adapter before tagged keys wrote: the category, "." and the key, verbatim.
    with service.client("alice") as alice:
        alice.save(key="Profile.Diet", value="Vegan", category="Profile")
        alice.save(key="profile.home", value="Porto", category="profile")
        alice.save(key="a-b.k", value="Old", category="a-b")
        alice.save(key="My Notes.To do", value="Call Bob", category="My Notes")
        store = MemoryStore(alice.with_user(None))

        before = [
            store.get(("alice", "Profile"), "Diet"),
            store.get(("alice", "profile"), "home"),
            store.get(("alice", "a-b"), "k"),
            store.get(("alice", "My Notes"), "To do"),
        ]
        store.put(("alice", "Profile"), "Diet", {"value": "Vegetarian"})
        store.put(("alice", "profile"), "home", {"value": "Lisbon"})
        store.delete(("alice", "a-b"), "k")
        store.put(("alice", "My Notes"), "To do", {"value": "Call Bob"})
        after = store.search(("alice",))

    assert [item.value["value"] for item in before] == ["Vegan", "Porto", "Old", "Call Bob"]
    assert sorted((item.namespace, item.key, item.value["value"]) for item in after) == [
        (("alice", "My Notes"), "To do", "Call Bob"),
        (("alice", "Profile"), "Diet", "Vegetarian"),
        (("alice", "profile"), "home", "Lisbon"),
    ]
    current = Memory.objects.filter(status="active", deleted_at__isnull=True)
    assert sorted(current.values_list("value", flat=True)) == ["Call Bob", "Lisbon", "Vegetarian"]


FILTER_ITEMS = {
    "a": {"color": "red", "score": 4.5, "meta": {"size": 1, "tag": "x"}, "tags": ["p", "q"]},
    "b": {"color": "red", "score": 3, "meta": {"size": 2}, "tags": ["p"], "flag": True},
    "c": {"color": "green", "score": "4", "meta": {"size": 1, "tag": "y"}, "flag": False},
    "d": {"color": "blue", "score": None, "tags": [{"k": 1, "j": 2}]},
}

# Filters whose answer LangGraph's InMemoryStore gives too (compared below).
FILTERS = [
    {"color": "red"},
    {"color": {"$eq": "red"}},
    {"color": {"$ne": "red"}},
    {"meta": {"size": 1}},  # a nested dict matches the fields it names
    {"meta": {"$eq": {"size": 1}}},  # $eq of a dict is the whole dict
    {"meta": {"size": 1, "tag": "y"}},
    {"tags": ["p"]},
    {"tags": ["p", "q"]},
    {"tags": [{"k": 1}]},
    {"flag": True},
    {"flag": 1},  # Python's equality: True == 1
    {"flag": None},  # missing or None
    {"score": 3.0},
    {"color": "red", "score": {"$gte": 3, "$lt": 4.5}},
    {"meta": {"size": {"$gt": 1}}},
]

# Filters InMemoryStore raises on while reading an item ("d" has no number): no match here.
UNCOMPARABLE_FILTERS = [
    ({"score": {"$gt": 3.5}}, ["a", "c"]),  # "4" compares as 4.0, as InMemoryStore's float()
    ({"score": {"$lte": "3"}}, ["b"]),
    ({"meta": {"size": {"$lt": 2}}}, ["a", "c"]),
]


def _filtered(store: BaseStore, conditions) -> list[str]:
    return sorted(item.key for item in store.search(("alice", "f"), filter=conditions))


def test_filter_follows_langgraphs_in_memory_store(service):
    reference = InMemoryStore()
    with service.client(user_id=None) as client:
        store = MemoryStore(client)
        for key, value in FILTER_ITEMS.items():
            store.put(("alice", "f"), key, value)
            reference.put(("alice", "f"), key, value)

        for conditions in FILTERS:
            assert _filtered(store, conditions) == _filtered(reference, conditions), conditions
        for conditions, expected in UNCOMPARABLE_FILTERS:
            assert _filtered(store, conditions) == expected, conditions
        for conditions, error in [
            ({"score": {"$in": [3]}}, "Unsupported operator: \\$in"),
            ({"score": {"$gt": 1, "size": 2}}, "Unsupported operator: size"),
            ({"meta": {"size": {"$regex": "1"}}}, "Unsupported operator: \\$regex"),
            ({"score": {"$gt": "high"}}, "compares numbers"),
        ]:
            with pytest.raises(ValueError, match=error):
                store.search(("alice", "f"), filter=conditions)
