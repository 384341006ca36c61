"""SearchOp.filter, read as LangGraph's InMemoryStore reads it."""

import math
from collections.abc import Callable
from typing import Any

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
