"""Issue 46: a generated suite of filters (every operator, nesting, metadata paths, missing
keys, each field's type) gives, for list and for search, the ids the Python reference
evaluator (tests/filters_reference.py) gives over the same memories. The suite runs on SQLite
and again on PostgreSQL (./scripts/test), so both databases answer as the reference does, and
so as each other."""

import datetime as dt
import json
import random

import pytest

from memories.filters.language import filter_parse
from memories.models import Memory, Source
from tests.filters_reference import matches

FILTERS = 240
BASE = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)

APPS = ["ios", "android", "web", "iOS", 5, True, None]
LOCALES = ["pt-BR", "en", "Ça va", "zz", "é", "en-GB"]
NAMES = ["Ana", "ana", "Émile", "zoë", "Zoe", "b"]
CATEGORIES = ["food", "travel", "work", "", "Food", "família"]
KEYS = ["diet", "home", "job", "pet", "sport", "music"]


def _metadata(rng: random.Random, i: int) -> dict:
    """A memory's metadata with values of every type, and keys often missing."""
    meta: dict = {}
    if rng.random() < 0.8:
        app = APPS[i % len(APPS)]
        meta["app"] = app
    if rng.random() < 0.7:
        meta["score"] = rng.choice([1, 2, 2.5, 7, -3, 0, "7", "10", 1e3])
    if rng.random() < 0.6:
        ticket = rng.choice(
            [
                {"id": rng.randint(1, 5), "status": rng.choice(["open", "closed"])},
                {"id": "3"},
                "T-1",
            ]
        )
        meta["ticket"] = ticket
    if rng.random() < 0.4:
        meta["tags"] = rng.sample(["vip", "new", "churn"], k=rng.randint(1, 2))
    if rng.random() < 0.6:
        meta["locale"] = rng.choice(LOCALES)
    if rng.random() < 0.5:
        meta["flag"] = rng.choice([True, False])
    if rng.random() < 0.5:
        meta["name"] = rng.choice(NAMES)
    if rng.random() < 0.1:
        meta["nothing"] = None
    if rng.random() < 0.4:
        meta["font size"] = rng.choice([12, 14, "14", 16.5])
    return meta


@pytest.fixture
def memories(api, owner):
    rng = random.Random(460)
    items = [
        {
            "key": f"{KEYS[i % len(KEYS)]} {i}",
            "value": f"Fact number {i} about {KEYS[i % len(KEYS)]}",
            "category": CATEGORIES[i % len(CATEGORIES)],
            "importance": round(rng.random(), 2),
            "confidence": rng.choice([0.5, 0.9, 1.0]),
            "pinned": i % 11 == 0,
            "metadata": _metadata(rng, i),
        }
        for i in range(48)
    ]
    response = api.post("/api/memories/batch", {"memories": items}, format="json")
    assert response.status_code == 201, response.content[:500]
    ids = [saved["id"] for saved in response.json()["data"]]
    # Times and sources a create cannot set, written as an import or extraction would.
    for i, memory_id in enumerate(ids):
        created = BASE + dt.timedelta(days=i, microseconds=i * 1000 if i % 3 else 0)
        Memory.objects.filter(id=memory_id).update(
            created_at=created,
            updated_at=created + dt.timedelta(hours=i % 5),
            valid_from=created - dt.timedelta(days=i % 4),
            source=[Source.MANUAL, Source.TOOL, Source.CONVERSATION][i % 3],
        )
    listed = api.get("/api/memories", {"page_size": 200}).json()["data"]
    assert len(listed) == 48
    return listed


def _time(rng: random.Random, memories: list[dict], field: str) -> str:
    stored = rng.choice(memories)[field]
    if rng.random() < 0.4:
        return stored  # the very value: eq, gte and lte bite
    moment = dt.datetime.fromisoformat(stored.replace("Z", "+00:00"))
    shifted = moment + dt.timedelta(hours=rng.choice([-30, -1, 1, 30]))
    return rng.choice([shifted.isoformat(), shifted.strftime("%Y-%m-%d")])


def _metadata_value(rng: random.Random):
    return rng.choice(
        [
            "ios",
            "android",
            "iOS",
            "web",
            "7",
            "open",
            "closed",
            "vip",
            "pt-BR",
            "en",
            "Ana",
            "ana",
            "Émile",
            "zoë",
            "Ça va",
            "b",
            "3",
            "T-1",
            5,
            7,
            2.5,
            0,
            -3,
            3,
            1000,
            True,
            False,
        ]
    )


METADATA_PATHS = [
    "metadata.app",
    "metadata.score",
    "metadata.ticket.id",
    "metadata.ticket.status",
    "metadata.ticket",
    "metadata.tags",
    "metadata.locale",
    "metadata.flag",
    "metadata.name",
    "metadata.nothing",
    "metadata.absent",
    "metadata.app.deeper",
    "metadata.font size",
]


def _condition(rng: random.Random, memories: list[dict]) -> dict:
    field = rng.choice(
        [
            "category",
            "key",
            "scope",
            "source",
            "importance",
            "confidence",
            "created_at",
            "updated_at",
            "valid_from",
            "pinned",
            *METADATA_PATHS,
            *METADATA_PATHS,
        ]
    )
    if field in ("category", "key"):
        pool = CATEGORIES if field == "category" else [m["key"] for m in memories] + KEYS
        op = rng.choice(["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", None])
        if op in ("in", "nin"):
            return {field: {op: rng.sample(pool, k=2)}}
        if op == "contains":
            return {field: {op: rng.choice(["o", "Fo", "ía", "1", "et"])}}
        value = rng.choice(pool) or "f"
        return {field: value} if op is None else {field: {op: value}}
    if field == "scope":
        op = rng.choice(["eq", "ne", "in", "nin"])
        values = ["user", "global", "project"]
        return {field: {op: rng.sample(values, k=2) if op in ("in", "nin") else rng.choice(values)}}
    if field == "source":
        op = rng.choice(["eq", "ne", "in", "nin"])
        values = ["manual", "tool", "conversation", "work"]
        return {field: {op: rng.sample(values, k=2) if op in ("in", "nin") else rng.choice(values)}}
    if field in ("importance", "confidence"):
        op = rng.choice(["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte"])
        values = [m[field] for m in memories] + [0.5, 0, 1]
        if op in ("in", "nin"):
            return {field: {op: rng.sample(values, k=3)}}
        return {field: {op: rng.choice(values)}}
    if field in ("created_at", "updated_at", "valid_from"):
        op = rng.choice(["eq", "ne", "gt", "gte", "lt", "lte"])
        return {field: {op: _time(rng, memories, field)}}
    if field == "pinned":
        return {field: {rng.choice(["eq", "ne"]): rng.choice([True, False])}}
    op = rng.choice(["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "exists", None])
    if op == "exists":
        return {field: {"exists": rng.choice([True, False])}}
    if op == "contains":
        return {field: {"contains": rng.choice(["o", "i", "A", "ç", "-", "7"])}}
    if op in ("in", "nin"):
        return {field: {op: [_metadata_value(rng) for _ in range(rng.randint(1, 3))]}}
    value = _metadata_value(rng)
    if op in ("gt", "gte", "lt", "lte") and isinstance(value, bool):
        value = 2
    return {field: value} if op is None else {field: {op: value}}


def _filter(rng: random.Random, memories: list[dict], depth: int = 0) -> dict:
    roll = rng.random()
    if depth >= 3 or roll < 0.45:
        condition = _condition(rng, memories)
        if rng.random() < 0.15:  # two conditions in one object: both must hold
            condition = {**condition, **_condition(rng, memories)}
        return condition
    if roll < 0.7:
        parts = [_filter(rng, memories, depth + 1) for _ in range(rng.randint(1, 3))]
        return {"and": parts}
    if roll < 0.9:
        parts = [_filter(rng, memories, depth + 1) for _ in range(rng.randint(1, 3))]
        return {"or": parts}
    return {"not": _filter(rng, memories, depth + 1)}


def generated_filters(memories: list[dict]) -> list[dict]:
    rng = random.Random(46)
    return [_filter(rng, memories) for _ in range(FILTERS)]


def test_every_generated_filter_lists_and_searches_what_the_reference_finds(api, memories):
    by_id = {memory["id"]: memory for memory in memories}
    operators_seen: set[str] = set()
    matched_some = matched_none = 0
    for raw in generated_filters(memories):
        text = json.dumps(raw)
        node = filter_parse(raw)
        expected = {memory_id for memory_id, memory in by_id.items() if matches(node, memory)}
        operators_seen |= {
            op
            for op in (
                "eq",
                "ne",
                "in",
                "nin",
                "gt",
                "gte",
                "lt",
                "lte",
                "contains",
                "exists",
                "and",
                "or",
                "not",
            )
            if f'"{op}"' in text
        }
        matched_some += bool(expected)
        matched_none += not expected

        listed = api.get("/api/memories", {"page_size": 200, "filter": text})
        assert listed.status_code == 200, (text, listed.content[:300])
        assert {m["id"] for m in listed.json()["data"]} == expected, text

        found = api.get(
            "/api/memories/search",
            {"q": "fact", "top_k": 50, "min_relevance": 0, "filter": text},
        )
        assert found.status_code == 200, (text, found.content[:300])
        assert {m["id"] for m in found.json()["data"]} == expected, text

    # The suite is what it says: every operator, and filters that match and that do not.
    assert operators_seen == {
        "eq",
        "ne",
        "in",
        "nin",
        "gt",
        "gte",
        "lt",
        "lte",
        "contains",
        "exists",
        "and",
        "or",
        "not",
    }
    assert matched_some > FILTERS // 4 and matched_none > 10, (matched_some, matched_none)
