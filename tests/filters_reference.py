"""A filter evaluated in plain Python over a memory as the API renders it: the reference both
databases' SQL (memories/filters/compile.py) is tested against. It follows docs/api.md's
rules, written again from them, not from the SQL: conditions are typed (a value of another
type, or a missing one, matches none of eq, in, gt, gte, lt, lte, contains, and every ne and
nin), text compares by code point, contains is case-sensitive, a metadata path walks
objects only."""

import datetime as dt
from typing import Any

from memories.filters.language import (
    FIELDS,
    METADATA,
    TIME,
    All,
    AnyOf,
    Condition,
    Node,
    Not,
)

MISSING = object()


def matches(node: Node, memory: dict) -> bool:
    if isinstance(node, All):
        return all(matches(part, memory) for part in node.parts)
    if isinstance(node, AnyOf):
        return any(matches(part, memory) for part in node.parts)
    if isinstance(node, Not):
        return not matches(node.part, memory)
    return _condition(node, memory)


def _value(c: Condition, memory: dict) -> Any:
    if c.field != METADATA:
        value = memory[c.field]
        if FIELDS[c.field] == TIME and value is not None:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return value
    value: Any = memory["metadata"]
    for key in c.path:
        if not isinstance(value, dict) or key not in value:
            return MISSING
        value = value[key]
    return value


def _same_type(stored: Any, wanted: Any) -> bool:
    if isinstance(wanted, bool):
        return isinstance(stored, bool)
    if isinstance(wanted, int | float):
        return isinstance(stored, int | float) and not isinstance(stored, bool)
    if isinstance(wanted, dt.datetime):
        return isinstance(stored, dt.datetime)
    return isinstance(stored, str)


def _equal(stored: Any, wanted: Any) -> bool:
    return _same_type(stored, wanted) and stored == wanted


def _condition(c: Condition, memory: dict) -> bool:
    stored = _value(c, memory)
    if c.op == "exists":
        return (stored is not MISSING) == c.value
    if c.op == "ne":
        return not _equal(stored, c.value)
    if c.op == "nin":
        return not any(_equal(stored, wanted) for wanted in c.value)
    if c.op == "eq":
        return _equal(stored, c.value)
    if c.op == "in":
        return any(_equal(stored, wanted) for wanted in c.value)
    if c.op == "contains":
        return isinstance(stored, str) and c.value in stored
    if not _same_type(stored, c.value):
        return False
    return {
        "gt": stored > c.value,
        "gte": stored >= c.value,
        "lt": stored < c.value,
        "lte": stored <= c.value,
    }[c.op]
