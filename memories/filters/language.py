"""The filter language every read takes (SPEC.md section 16, docs/api.md "Filters"): a JSON
object of `and`, `or`, `not` and conditions on a memory's fields and its metadata paths,
parsed here into a small tree that compile.py turns into SQL and reference.py evaluates in
Python. Parsing checks everything: an unknown operator or field, a value of the wrong type,
too deep or too long is an InvalidInput naming the path ("filter.and[1].metadata.app.gte").

    {"and": [{"category": {"in": ["food", "travel"]}},
             {"importance": {"gte": 0.7}},
             {"not": {"source": "import"}},
             {"metadata.app": "ios"}]}

A field's condition is an object of operators (several: all must hold) or a bare value (eq).
An object of several fields holds when all hold."""

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime

from memories.carriers import SCOPE_ALIASES, scope_named
from memories.errors import InvalidInput
from memories.models import Scope, Source

TEXT, NUMBER, TIME, BOOLEAN, SCOPE, SOURCE, ANY = (
    "text",
    "number",
    "time",
    "boolean",
    "scope",
    "source",
    "any",
)
# The memory's own fields a filter may name, and their types.
FIELDS = {
    "category": TEXT,
    "key": TEXT,
    "scope": SCOPE,
    "source": SOURCE,
    "importance": NUMBER,
    "confidence": NUMBER,
    "created_at": TIME,
    "updated_at": TIME,
    "valid_from": TIME,
    "pinned": BOOLEAN,
}
METADATA = "metadata"
OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "exists")
# Which operators each type of field takes (metadata paths take every one).
TYPE_OPERATORS = {
    TEXT: {"eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains"},
    NUMBER: {"eq", "ne", "in", "nin", "gt", "gte", "lt", "lte"},
    TIME: {"eq", "ne", "gt", "gte", "lt", "lte"},
    BOOLEAN: {"eq", "ne"},
    SCOPE: {"eq", "ne", "in", "nin"},
    SOURCE: {"eq", "ne", "in", "nin"},
    ANY: set(OPERATORS),
}
LOGICAL = ("and", "or", "not")

# Limits (docs/api.md): how deep `and`/`or`/`not` nest, how many conditions in all, how long
# the filter's JSON is, how many values an `in` lists, how long a text value is.
MAX_DEPTH = 8
MAX_CONDITIONS = 50
MAX_JSON_CHARS = 10_000
MAX_IN_VALUES = 100
MAX_TEXT_CHARS = 1_000
# A metadata path: at most this many keys, each a key name: 1 to 64 characters, no ".",
# which separates them, no quote, backslash or control character, and not an integer (which
# PostgreSQL would read as a list index).
MAX_PATH_KEYS = 5
KEY_NAME = re.compile(r'^(?!-?[0-9]+\Z)[^."\\\x00-\x1f\x7f]{1,64}\Z')


@dataclass(frozen=True)
class Condition:
    field: str  # a name of FIELDS, or "metadata"
    path: tuple[str, ...]  # the keys below metadata; () for a field
    op: str
    value: Any  # typed: str, int/float, datetime, bool, a tuple for in/nin


@dataclass(frozen=True)
class All:
    parts: tuple["Node", ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple["Node", ...]


@dataclass(frozen=True)
class Not:
    part: "Node"


Node = Condition | All | AnyOf | Not


class _Budget:
    def __init__(self) -> None:
        self.conditions = 0


def filter_parse(raw: Any, *, name: str = "filter") -> Node | None:
    """The tree of a filter given as a JSON object or its text (a query string's); None for
    an empty one ({} or ""). Raises InvalidInput naming the path of the first problem."""
    if raw is None or raw == "" or raw == {}:
        return None
    if isinstance(raw, str):
        if len(raw) > MAX_JSON_CHARS:
            raise InvalidInput(f"At most {MAX_JSON_CHARS} characters.", field=name)
        try:
            raw = json.loads(raw)
        except ValueError as error:
            raise InvalidInput(f"Not JSON: {error.args[0]}.", field=name) from None
        if raw == {}:
            return None
    elif len(json.dumps(raw, default=str)) > MAX_JSON_CHARS:
        raise InvalidInput(f"At most {MAX_JSON_CHARS} characters of JSON.", field=name)
    return _node(raw, name, depth=1, budget=_Budget())


def _node(raw: Any, path: str, *, depth: int, budget: _Budget) -> Node:
    if depth > MAX_DEPTH:
        raise InvalidInput(f"Nested deeper than {MAX_DEPTH} levels.", field=path)
    if not isinstance(raw, dict) or not raw:
        raise InvalidInput("Expected a non-empty object of fields or and/or/not.", field=path)
    parts: list[Node] = []
    for name, value in raw.items():
        where = f"{path}.{name}"
        if name in ("and", "or"):
            if not isinstance(value, list) or not value:
                raise InvalidInput(f"{name} takes a non-empty list of filters.", field=where)
            nodes = tuple(
                _node(item, f"{where}[{i}]", depth=depth + 1, budget=budget)
                for i, item in enumerate(value)
            )
            parts.append(All(nodes) if name == "and" else AnyOf(nodes))
        elif name == "not":
            parts.append(Not(_node(value, where, depth=depth + 1, budget=budget)))
        else:
            parts.extend(_conditions(name, value, where, budget=budget))
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _field(name: str, where: str) -> tuple[str, tuple[str, ...], str]:
    if name in FIELDS:
        return name, (), FIELDS[name]
    if name == METADATA or name.startswith(METADATA + "."):
        keys = tuple(name.split(".")[1:])
        if not keys:
            raise InvalidInput("Name a key: metadata.<key>[.<key>...].", field=where)
        if len(keys) > MAX_PATH_KEYS:
            raise InvalidInput(f"At most {MAX_PATH_KEYS} keys in a metadata path.", field=where)
        for key in keys:
            if not KEY_NAME.match(key):
                raise InvalidInput(
                    f"{key!r} is not a metadata key name (1 to 64 characters without . \" \\ "
                    "or control characters, not an integer).",
                    field=where,
                )
        return METADATA, keys, ANY
    known = ", ".join([*FIELDS, "metadata.<key>"])
    raise InvalidInput(f"Unknown field {name!r}; fields: {known}, and/or/not.", field=where)


def _conditions(name: str, raw: Any, where: str, *, budget: _Budget) -> list[Condition]:
    field, keys, kind = _field(name, where)
    operations = raw if isinstance(raw, dict) else {"eq": raw}
    if not operations:
        raise InvalidInput("Expected an operator: " + ", ".join(OPERATORS) + ".", field=where)
    out = []
    for op, value in operations.items():
        at = f"{where}.{op}" if isinstance(raw, dict) else where
        if op not in OPERATORS:
            raise InvalidInput(
                f"Unknown operator {op!r}; operators: {', '.join(OPERATORS)}.", field=at
            )
        if op not in TYPE_OPERATORS[kind]:
            raise InvalidInput(f"{name} ({kind}) does not take {op}.", field=at)
        budget.conditions += 1
        if budget.conditions > MAX_CONDITIONS:
            raise InvalidInput(f"At most {MAX_CONDITIONS} conditions.", field=at)
        out.append(Condition(field, keys, op, _value(kind, op, value, at)))
    return out


def _value(kind: str, op: str, value: Any, at: str) -> Any:
    if op == "exists":
        if not isinstance(value, bool):
            raise InvalidInput("exists takes true or false.", field=at)
        return value
    if op in ("in", "nin"):
        if not isinstance(value, list) or not value:
            raise InvalidInput(f"{op} takes a non-empty list.", field=at)
        if len(value) > MAX_IN_VALUES:
            raise InvalidInput(f"At most {MAX_IN_VALUES} values.", field=at)
        return tuple(_scalar(kind, item, f"{at}[{i}]") for i, item in enumerate(value))
    if op == "contains":
        if not isinstance(value, str) or not value:
            raise InvalidInput("contains takes a non-empty string.", field=at)
        return _text(value, at)
    scalar = _scalar(kind, value, at)
    if op in ("gt", "gte", "lt", "lte") and isinstance(scalar, bool):
        raise InvalidInput(f"{op} compares numbers, times or text, not true/false.", field=at)
    return scalar


def _text(value: str, at: str) -> str:
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidInput(f"At most {MAX_TEXT_CHARS} characters.", field=at)
    if "\x00" in value:
        raise InvalidInput("A NUL character is not allowed.", field=at)
    return value


def _number(value: Any, at: str) -> int | float:
    # JSON true/false are not numbers, though Python's bool is an int.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("Expected a number.", field=at)
    if value != value or value in (float("inf"), float("-inf")):
        raise InvalidInput("Expected a finite number.", field=at)
    return value


def _time(value: Any, at: str) -> dt.datetime:
    if isinstance(value, str):
        try:
            moment = parse_datetime(value)
            if moment is None and (day := parse_date(value)) is not None:
                moment = dt.datetime.combine(day, dt.time())
        except ValueError:
            moment = None
        if moment is not None:
            # A time without an offset is UTC.
            return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    raise InvalidInput("Expected an ISO 8601 time, e.g. 2026-03-01T00:00:00Z.", field=at)


def _scalar(kind: str, value: Any, at: str) -> Any:
    if kind == TEXT:
        if not isinstance(value, str):
            raise InvalidInput("Expected a string.", field=at)
        return _text(value, at)
    if kind == NUMBER:
        return _number(value, at)
    if kind == TIME:
        return _time(value, at)
    if kind == BOOLEAN:
        if not isinstance(value, bool):
            raise InvalidInput("Expected true or false.", field=at)
        return value
    if kind == SCOPE:
        if not isinstance(value, str) or (value not in Scope.values and value not in SCOPE_ALIASES):
            names = ", ".join([*Scope.values, *SCOPE_ALIASES])
            raise InvalidInput(f"Expected a scope: {names}.", field=at)
        return scope_named(value)
    if kind == SOURCE:
        if not isinstance(value, str) or value not in Source.values:
            raise InvalidInput(f"Expected a source: {', '.join(Source.values)}.", field=at)
        return value
    # A metadata value: a string, a number or true/false (compared with values of its type).
    if isinstance(value, str):
        return _text(value, at)
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return _number(value, at)
    raise InvalidInput("Expected a string, a number or true/false.", field=at)
