"""SearchOp.filter, read as LangGraph's InMemoryStore reads it (matches), and as the
service's filter on the metadata a put writes (service_filter), which narrows what a search
fetches before matches decides."""

import json
import math
from collections.abc import Callable
from typing import Any

from memory_client.langgraph.metadata import KEY_NAME, METADATA_KEY

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
    with something that is not a number, wherever it sits in the filter. The filter's own
    keys are the value's fields, whatever they start with ({"$x": 1} is the field "$x")."""
    for wanted in (conditions or {}).values():
        _check(wanted)


def _check(conditions: Any) -> None:
    if isinstance(conditions, dict):
        if any(name.startswith("$") for name in conditions):
            for name, operand in conditions.items():
                if name not in _OPERATORS:
                    raise ValueError(f"Unsupported operator: {name}")
                if name in _ORDERINGS and _number(operand) is None:
                    raise ValueError(f"{name} compares numbers; got {operand!r}.")
            return
        for wanted in conditions.values():
            _check(wanted)
    elif isinstance(conditions, list | tuple):
        for wanted in conditions:
            _check(wanted)


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


# SearchOp.filter on the service (docs/api.md, "Filters"), over metadata["langgraph"]. Every
# condition sent holds for at least the items `matches` passes (a superset), never fewer:
# matches still decides. What has no such condition is left out, and the rest still holds:
#
# - a plain value or $eq: a string is the same string; a number is a number of that value
#   and, for 1 and 0, true and false (Python: True == 1), a boolean the same and 1 or 0;
#   None (missing too, to InMemoryStore), lists and $eq of a dict are left out.
# - a nested dict: a condition on each field it names, down the metadata path.
# - $ne: the service's ne of the same values (it also holds for a missing value and one of
#   another type, as Python's != does); $ne None: the field exists.
# - $gt, $gte, $lt, $lte compare float() of both sides, so "10" > 9 and True >= 1: the
#   service's comparison of numbers, or any value that is not a number the comparison can
#   answer exactly (within 2**53, where a float holds every integer), passed on to matches.
#
# The service takes limits: 50 conditions, 5 keys in a metadata path, 1000 characters in a
# text value, 10,000 characters of JSON; a condition over them is left out. Memories without
# metadata["langgraph"] (an older adapter's items, values that did not fit in metadata,
# memories saved otherwise) are let through by an `or` with {"exists": false}.
METADATA_PATH = f"metadata.{METADATA_KEY}"
UNSTORED = {METADATA_PATH: {"exists": False}}
EXACT_LIMIT = 2**53
MAX_CONDITIONS = 50
MAX_PATH_KEYS = 5
MAX_TEXT_CHARS = 1000
MAX_JSON_CHARS = 10_000


def service_filter(conditions: dict[str, Any] | None) -> dict[str, Any] | None:
    """The service's filter for SearchOp.filter (check_filter it first): the items whose
    metadata holds every condition that can be said, or that have no such metadata; None
    when no condition can be said."""
    kept: list[dict[str, Any]] = []
    for condition in _fields(conditions or {}, (METADATA_KEY,)):
        if _within_limits([*kept, condition]):
            kept.append(condition)
    return _or_unstored(kept) if kept else None


def _or_unstored(kept: list[dict[str, Any]]) -> dict[str, Any]:
    return {"or": [UNSTORED, kept[0] if len(kept) == 1 else {"and": kept}]}


def _within_limits(kept: list[dict[str, Any]]) -> bool:
    whole = _or_unstored(kept)
    # The body's JSON as the service measures it (spaced), longer than a query string's.
    return _count(whole) <= MAX_CONDITIONS and len(json.dumps(whole)) <= MAX_JSON_CHARS


def _count(node: Any) -> int:
    if isinstance(node, dict):
        return sum(
            _count(part)
            if name in ("and", "or", "not")
            else (len(part) if isinstance(part, dict) else 1)
            for name, part in node.items()
        )
    return sum(_count(part) for part in node) if isinstance(node, list) else 0


def _fields(conditions: dict[str, Any], path: tuple[str, ...]) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = []
    for name, wanted in conditions.items():
        if isinstance(name, str) and KEY_NAME.match(name) and len(path) < MAX_PATH_KEYS:
            said.extend(_field(".".join(("metadata", *path, name)), (*path, name), wanted))
    return said


def _field(field: str, path: tuple[str, ...], wanted: Any) -> list[dict[str, Any]]:
    if isinstance(wanted, dict):
        if any(name.startswith("$") for name in wanted):
            return [
                condition
                for operator, operand in wanted.items()
                for condition in _operator(field, operator, operand)
            ]
        return _fields(wanted, path)  # {} holds for any dict: nothing to say
    return _equal(field, wanted)


def _equal(field: str, wanted: Any) -> list[dict[str, Any]]:
    equal = _equal_values(wanted)
    if not equal:
        return []
    return [{field: equal[0] if len(equal) == 1 else {"in": equal}}]


def _operator(field: str, operator: str, operand: Any) -> list[dict[str, Any]]:
    if operator == "$eq":
        return _equal(field, operand)
    if operator == "$ne":
        if operand is None:
            return [{field: {"exists": True}}]
        equal = _equal_values(operand)
        return [{field: {"nin": equal}}] if equal else []
    bound = _number(operand)
    if bound is None or not math.isfinite(bound):
        return []
    if bound.is_integer() and abs(bound) <= EXACT_LIMIT:
        said: float | int = int(bound)
    else:
        said = bound
    service_operator = operator.removeprefix("$")
    within = {field: {"gte": -EXACT_LIMIT, "lte": EXACT_LIMIT}}
    return [{"or": [{field: {service_operator: said}}, {"not": within}]}]


def _equal_values(wanted: Any) -> list[Any]:
    """The values the service's equality must take to find every value Python's == finds
    equal to `wanted`; [] when it cannot say it."""
    if isinstance(wanted, bool):
        return [wanted, int(wanted)]
    if isinstance(wanted, int | float):
        if not math.isfinite(wanted) or abs(wanted) > EXACT_LIMIT:
            return []
        if wanted in (0, 1):
            return [wanted, bool(wanted)]
        return [wanted]
    if isinstance(wanted, str):
        return [wanted] if _sayable(wanted) else []
    return []  # None, a list, a dict: no such condition in the service's language


def _sayable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: neither metadata nor a filter holds one
        return False
    return len(text) <= MAX_TEXT_CHARS and "\x00" not in text
