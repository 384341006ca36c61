"""`metadata`: a JSON object of the product's own keys on a memory (the app or channel it came
from, a ticket id, a locale, the LangGraph value it stores). Stored and returned as given,
filtered on (language.py), never ranked on. Limits (docs/api.md): at most
MEMORY_METADATA_MAX_BYTES of JSON, objects and lists nested at most MAX_DEPTH deep, key names
of language.KEY_NAME (the names a filter path can say)."""

import json
from typing import Any

from django.conf import settings

from memories.errors import InvalidInput
from memories.filters.language import KEY_NAME

MAX_DEPTH = 5


def metadata_clean(value: Any, *, field: str = "metadata") -> dict:
    """The metadata object as it will be stored; raises InvalidInput naming the path of the
    first problem (a key name, the depth, a number JSON cannot hold, the size)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("Expected a JSON object of your own keys.", field=field)
    _check(value, field, depth=1)
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    limit = settings.MEMORY_METADATA_MAX_BYTES
    if size > limit:
        raise InvalidInput(f"At most {limit} bytes of JSON; this is {size}.", field=field)
    return value


def _check(value: Any, path: str, *, depth: int) -> None:
    if isinstance(value, dict | list) and depth > MAX_DEPTH:
        raise InvalidInput(f"Objects and lists nest at most {MAX_DEPTH} deep.", field=path)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not KEY_NAME.match(key):
                raise InvalidInput(
                    f"{key!r} is not a key name: 1 to 64 characters without . \" \\ or "
                    "control characters, not an integer.",
                    field=f"{path}.{key}",
                )
            _check(item, f"{path}.{key}", depth=depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]", depth=depth + 1)
    elif isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise InvalidInput("Not a JSON number.", field=path)
    elif isinstance(value, str) and "\x00" in value:
        raise InvalidInput("A NUL character is not allowed.", field=path)
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise InvalidInput("Not a JSON value.", field=path)


def metadata_merge(current: dict, patch: dict) -> dict:
    """RFC 7386 JSON merge patch: a key set to null is removed, an object merges into an
    object, anything else replaces."""
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = metadata_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
