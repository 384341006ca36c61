"""The LangGraph store of the Python client (memory_client.langgraph.MemoryStore) inside real
LangGraph graphs, against a live service: put, get, search and delete round trips from a
node that uses the injected store, and what the service holds afterwards."""

import asyncio
import json
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
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
