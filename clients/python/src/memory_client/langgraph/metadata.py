"""An item's value kept in its memory's metadata too, as ``metadata["langgraph"]``, so that a
search's filter runs on the service (filters.service_filter) rather than on every memory of
the namespace fetched.

The value's text stays what a get reads (names.py): metadata on PostgreSQL is jsonb, which
keeps neither the order of an object's keys nor every value (a key name the service refuses,
a value over its limits), so metadata is the filter's copy only. A value that does not fit
the service's rules for metadata (docs/api.md, "Metadata") is stored without one; the
filters the store sends let such memories through to the check on the client."""

import json
import math
import re
from typing import Any

# The top-level metadata key of the item's value.
METADATA_KEY = "langgraph"
# The service's rules (memories.filters.metadata and memories.filters.language): a key name
# is 1 to 64 characters with no ".", '"', "\" or control character, and not an integer;
# objects and lists nest at most 5 deep (the metadata object being the first); at most
# MEMORY_METADATA_MAX_BYTES (8192 by default) of compact JSON in UTF-8.
KEY_NAME = re.compile(r'^(?!-?[0-9]+\Z)[^."\\\x00-\x1f\x7f]{1,64}\Z')
METADATA_MAX_DEPTH = 5
METADATA_MAX_BYTES = 8192


def metadata_of(value: dict[str, Any]) -> dict[str, Any] | None:
    """The metadata a put of `value` writes, or None when the value does not fit in
    metadata (the memory is then saved without the key)."""
    metadata = {METADATA_KEY: value}
    if not _fits(metadata, depth=1):
        return None
    try:
        text = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError):  # not JSON, or a lone surrogate
        return None
    return metadata if size <= METADATA_MAX_BYTES else None


def _fits(value: Any, *, depth: int) -> bool:
    if isinstance(value, dict | list | tuple) and depth > METADATA_MAX_DEPTH:
        return False
    if isinstance(value, dict):
        return all(
            isinstance(name, str) and KEY_NAME.match(name) and _fits(item, depth=depth + 1)
            for name, item in value.items()
        )
    if isinstance(value, list | tuple):
        return all(_fits(item, depth=depth + 1) for item in value)
    if isinstance(value, str):
        return "\x00" not in value
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, int)  # bool is an int


def same_json(one: Any, other: Any) -> bool:
    """Whether two JSON values are the same value: objects whatever their keys' order (as
    jsonb gives them back), but true is not 1 and 1 is not "1", unlike Python's ==."""
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(same_json(one[k], other[k]) for k in one)
    if isinstance(one, list | tuple) and isinstance(other, list | tuple):
        return len(one) == len(other) and all(
            same_json(a, b) for a, b in zip(one, other, strict=True)
        )
    if isinstance(one, bool) or isinstance(other, bool):
        return type(one) is type(other) and one == other
    if isinstance(one, int | float) and isinstance(other, int | float):
        return one == other
    return type(one) is type(other) and one == other
