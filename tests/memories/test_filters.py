"""Issue 46, items 2 and 3: one filter language on list, search, context, memory_recall,
memory_context, export and bulk review; applied inside recall, so top_k is full when enough
memories match; a bad filter answers 400 naming the path of the problem, over REST, the tools
and MCP."""

import json

import numpy as np
import pytest

from memories.filters.language import filter_parse
from memories.models import Memory, Scope, Status
from memories.services import memory_create
from tests.memories.helpers import assert_error

BAD_FILTERS = [
    ({"metadata.app": {"like": "io"}}, "filter.metadata.app.like"),  # unknown operator
    ({"colour": "red"}, "filter.colour"),  # unknown field
    ({"importance": {"gte": "high"}}, "filter.importance.gte"),  # wrong type
    ({"created_at": {"gt": "yesterday"}}, "filter.created_at.gt"),  # not a time
    ({"pinned": {"gt": True}}, "filter.pinned.gt"),  # an operator the type does not take
    (
        {"and": [{"or": [{"not": {"not": {"not": {"not": {"not": {"not": {"key": "k"}}}}}}}]}]},
        "filter.and[0].or[0].not.not.not.not.not.not",
    ),  # too deep
    ({"or": [{"key": f"k{i}"} for i in range(60)]}, "filter.or[50].key"),  # too many
    ({"key": {"in": ["x" * 20] * 101}}, "filter.key.in"),  # too long a list
    ({"metadata.12": 1}, "filter.metadata.12"),  # not a key name
    ({"and": []}, "filter.and"),
]


def save(api, key, value, **fields):
    response = api.post("/api/memories", {"key": key, "value": value, **fields}, format="json")
    assert response.status_code in (200, 201), response.content[:500]
    return response.json()


@pytest.fixture
def saved(api):
    return {
        "ios diet": save(api, "diet", "Is vegetarian", category="food", metadata={"app": "ios"}),
        "web allergy": save(
            api,
            "allergy",
            "Allergic to peanuts",
            category="food",
            importance=0.9,
            metadata={"app": "web"},
        ),
        "ios city": save(api, "city", "Lives in Porto", category="home", metadata={"app": "ios"}),
        "no app": save(api, "cuisine", "Loves Thai food", category="food"),
    }


def ids(response) -> set[str]:
    assert response.status_code == 200, response.content[:500]
    return {m["id"] for m in response.json()["data"]}


def test_list_search_context_and_export_take_one_filter(api, saved):
    ios_food = {"category": "food", "metadata.app": "ios"}
    text = json.dumps(ios_food)

    listed = ids(api.get("/api/memories", {"filter": text}))
    found = ids(api.get("/api/memories/search", {"q": "what do I eat?", "filter": text}))
    context = api.post(
        "/api/memories/context", {"query": "what do I eat?", "filter": ios_food}, format="json"
    ).json()
    exported = b"".join(
        api.get("/api/memories/export", {"filter": text}).streaming_content
    ).decode()

    assert listed == found == {saved["ios diet"]["id"]}
    assert {m["id"] for m in context["memories"]} == {saved["ios diet"]["id"]}
    assert "peanuts" not in context["hint"]
    assert [json.loads(line)["id"] for line in exported.splitlines()] == [saved["ios diet"]["id"]]


def test_the_recall_and_context_tools_take_a_filter_as_an_object_or_json_text(api, saved):
    recalled = api.post(
        "/api/tools/memory_recall",
        {"query": "what do I eat?", "filter": '{"metadata.app": {"ne": "ios"}}'},
        format="json",
    )
    context = api.post(
        "/api/tools/memory_context",
        {"query": "what do I eat?", "filter": {"importance": {"gte": 0.8}}},
        format="json",
    )

    assert ids(recalled) <= {saved["web allergy"]["id"], saved["no app"]["id"]}
    assert saved["web allergy"]["id"] in ids(recalled)
    assert [m["id"] for m in context.json()["memories"]] == [saved["web allergy"]["id"]]


def test_a_filter_holds_for_pinned_memories_in_the_hint(api, saved):
    save(api, "style", "Prefers short answers", pinned=True, metadata={"app": "web"})

    hint = api.post(
        "/api/memories/context",
        {"query": "what do I eat?", "filter": {"metadata.app": "ios"}},
        format="json",
    ).json()["hint"]

    assert "short answers" not in hint and "vegetarian" in hint


@pytest.mark.parametrize("raw, path", BAD_FILTERS)
def test_a_bad_filter_is_a_400_naming_its_path_on_every_read(api, saved, raw, path):
    text = json.dumps(raw)

    for response in (
        api.get("/api/memories", {"filter": text}),
        api.get("/api/memories/search", {"q": "food", "filter": text}),
        api.post("/api/memories/context", {"query": "food", "filter": raw}, format="json"),
        api.get("/api/memories/export", {"filter": text}),
        api.post("/api/tools/memory_recall", {"query": "food", "filter": raw}, format="json"),
        api.post("/api/tools/memory_context", {"query": "food", "filter": text}, format="json"),
    ):
        assert_error(response, 400, path)


def test_a_filter_that_is_not_json_or_too_long_is_a_400_naming_filter(api):
    assert_error(api.get("/api/memories", {"filter": "{app: ios"}), 400, "filter")
    too_long = json.dumps({"key": {"in": ["x" * 500] * 30}})
    assert_error(api.get("/api/memories/search", {"q": "x", "filter": too_long}), 400, "filter")


def test_an_empty_filter_filters_nothing(api, saved):
    assert len(ids(api.get("/api/memories", {"filter": "{}"}))) == 4
    assert filter_parse({}) is None


def test_bulk_review_takes_a_filter(staff_api, owner):
    for app in ("ios", "ios", "web"):
        Memory.objects.create(
            user=owner,
            scope=Scope.USER,
            key=f"k {app}",
            value="v",
            status=Status.PENDING_REVIEW,
            metadata={"app": app},
        )

    pending = staff_api.get(
        "/api/admin/memories/pending", {"filter": json.dumps({"metadata.app": "ios"})}
    )
    approved = staff_api.post(
        "/api/admin/memories/bulk-approve", {"filter": {"metadata.app": "ios"}}, format="json"
    )
    nothing = staff_api.post("/api/admin/memories/bulk-reject", {}, format="json")

    assert len(pending.json()["data"]) == 2
    assert approved.json() == {"approved": 2}
    assert Memory.objects.filter(status=Status.PENDING_REVIEW).get().metadata == {"app": "web"}
    assert_error(nothing, 400, "ids")


def test_a_filter_matching_one_percent_of_the_memories_still_fills_top_k(api, owner):
    """Inside the search, not after it: 1,000 memories of which 10 match; the nearest 50 of
    all would hold few of them, if any."""
    rng = np.random.default_rng(46)
    for i in range(1000):
        vector = rng.normal(size=384)
        memory_create(
            actor=owner,
            scope=Scope.USER,
            user=owner,
            key=f"note {i}",
            value=f"Note number {i}",
            vector=list(vector / np.linalg.norm(vector)),
        )
    rare = list(Memory.objects.order_by("id").values_list("id", flat=True)[::100])
    Memory.objects.filter(id__in=rare).update(metadata={"app": "watch"})

    found = api.get(
        "/api/memories/search",
        {"q": "note", "top_k": 10, "min_relevance": 0, "filter": '{"metadata.app": "watch"}'},
    )

    assert len(ids(found)) == 10 and ids(found) <= {str(i) for i in rare}
