"""Where a LangGraph item lives in the service and back: a namespace's end user, scope,
carrier and category (Place), the memory key of a namespace and key (memory_key_of), the text
of a value (encode_value, decode_value), and the item a memory of the service is
(read_memory, item_of). The mapping is described in memory_client.langgraph's docstring."""

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from langgraph.store.base import SearchItem

from memory_client.types import Memory

PAGE_SIZE = 200  # the API's largest page

# Namespace labels that name a carrier, after the user's id: label prefix -> scope, field.
CARRIER_LABELS = {
    "project": ("project", "project_id"),
    "persona": ("persona_user", "persona_id"),
    "topic": ("session", "topic_id"),
}
READ_ONLY_SCOPES = {"session"}


@dataclass(frozen=True)
class Place:
    """Where a namespace points in the service: the end user, the scope and its carrier,
    and the path kept in the memories' category."""

    user_id: str
    scope: str
    carrier: tuple[str, str] | None  # (field, id), e.g. ("project_id", "…")
    path: tuple[str, ...]

    @classmethod
    def of(cls, namespace: tuple[str, ...]) -> "Place":
        if not namespace:
            raise ValueError("A namespace starts with the end user's id: (user_id, ...).")
        user_id, rest = namespace[0], tuple(namespace[1:])  # a list is a namespace too
        if rest and rest[0].partition(":")[0] in CARRIER_LABELS and ":" in rest[0]:
            kind, _, carrier_id = rest[0].partition(":")
            scope, field = CARRIER_LABELS[kind]
            return cls(user_id, scope, (field, carrier_id), rest[1:])
        return cls(user_id, "user", None, rest)

    @property
    def namespace(self) -> tuple[str, ...]:
        return (self.user_id, *self.carrier_labels, *self.path)

    @property
    def carrier_labels(self) -> tuple[str, ...]:
        if self.carrier is None:
            return ()
        field, carrier_id = self.carrier
        kind = field.removesuffix("_id")
        return (f"{kind}:{carrier_id}",)

    @property
    def category(self) -> str:
        """The memories' category: the path joined with "." (no label holds one), shown in
        the review pages and filtered on to list the namespace; not read back (the key is)."""
        return _category_of(self.path)

    def memory_key(self, key: str) -> str:
        return memory_key_of(self.path, key)

    def list_filters(self, *, exact: bool) -> dict[str, Any]:
        """GET /api/memories filters that hold this place's memories (`exact`: in this very
        namespace, else also in those below it); they may hold others too, which `located`
        sorts out."""
        filters: dict[str, Any] = {"page_size": PAGE_SIZE}
        if not exact and self.carrier is None and not self.path:
            return filters  # (user_id,): every namespace of the user
        filters["scope"] = self.scope
        if self.carrier is not None and self.carrier[0] != "topic_id":  # no such filter
            filters[self.carrier[0]] = self.carrier[1]
        if exact and self.path:
            filters["category"] = self.category
        return filters

    def recall_context(self) -> dict[str, Any]:
        """The search parameters that bring this place's scope into recall."""
        return dict([self.carrier]) if self.carrier is not None else {}


# A stored key and its names, both ways (README.md, "How keys are stored"): names made of
# lowercase ASCII letters and digits are stored as they are, path and key joined with "."
# ("profile.diet"), which the service's key normalisation leaves one to one. Any other name
# is escaped and tagged: "Profile.Diet #<tag>", the tag a 128-bit digest of the exact path
# and key in lowercase base32, so the service (which compares keys case-folded, punctuation
# as spaces) keeps every such item its own fact, and the names read back exactly.
PLAIN_NAME = re.compile(r"[a-z0-9]+")
TAGGED_KEY = re.compile(r"(?:(.*) )?#([a-z2-7]{26})")
KEY_MAX_LENGTH = 200  # the service's
CATEGORY_MAX_LENGTH = 100
# The value of an item whose escaped names do not fit in a key: the names and the value.
NAMES_FIELD = "langgraph_item"


def _tag(path: tuple[str, ...], key: str) -> str:
    names = json.dumps([list(path), key], ensure_ascii=False).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(names, digest_size=16).digest()
    return base64.b32encode(digest).decode().rstrip("=").lower()


def _escape(name: str, also: str = "") -> str:
    """`name` with no whitespace but " ", no unprintable character, no "%" (nor those of
    `also`): each such character as %XX of its UTF-8 bytes, so unquote gives it back."""
    return "".join(
        char
        if char.isprintable() and char not in "%" + also
        else "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        for char in name
    )


def _category_of(path: tuple[str, ...]) -> str:
    # Read by people and filtered on, never read back: unprintable characters, which the
    # service may refuse, escaped; cut to the service's length.
    joined = ".".join(path)
    return "".join(_escape(char) if not char.isprintable() else char for char in joined)[
        :CATEGORY_MAX_LENGTH
    ]


def is_plain(path: tuple[str, ...], key: str) -> bool:
    return all(PLAIN_NAME.fullmatch(name) for name in (*path, key))


def memory_key_of(path: tuple[str, ...], key: str) -> str:
    """The memory key an item is stored under (see above); when the escaped names do not fit
    in a key, a cut of them, with the tag (the names then travel in the value)."""
    if is_plain(path, key):
        joined = ".".join((*path, key))
        if len(joined) <= KEY_MAX_LENGTH and len(_category_of(path)) == len(".".join(path)):
            return joined
    escaped = ".".join(_escape(name, also=".") for name in (*path, key))
    if escaped.startswith(" "):  # the service trims keys; inner spaces stay
        escaped = "%20" + escaped[1:]
    tagged = f"{escaped} #{_tag(path, key)}"
    if len(tagged) <= KEY_MAX_LENGTH:
        return tagged
    return f"{escaped[: KEY_MAX_LENGTH - 30].rstrip('%')}… #{_tag(path, key)}"


def names_fit(path: tuple[str, ...], key: str) -> bool:
    return not memory_key_of(path, key).endswith(f"… #{_tag(path, key)}")


@dataclass(frozen=True)
class Stored:
    """A memory as the store reads it: its place in the store, its value, and whether it is
    in the form a put writes now (not an older adapter's, nor a memory saved elsewhere)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    current_form: bool


def read_memory(memory: Memory) -> Stored | None:
    """The item a memory of the service is; None for memories of no end user (persona
    scope, shared)."""
    user_id = memory["external_user_id"]
    if user_id is None or memory["scope"] == "persona":
        return None
    carrier: tuple[str, str] | None = None
    for field in ("project_id", "persona_id", "topic_id"):
        value = memory.get(field)
        if value:
            carrier = (field, str(value))
            break
    stored_key, text = memory["key"], memory["value"]
    path, key, value, current = _read_names(stored_key, memory["category"], text)
    place = Place(user_id, memory["scope"], carrier, path)
    return Stored(place.namespace, key, value, current)


def _read_names(
    stored_key: str, category: str, text: str
) -> tuple[tuple[str, ...], str, dict[str, Any], bool]:
    tagged = TAGGED_KEY.fullmatch(stored_key)
    if tagged is not None:
        escaped, tag = tagged.group(1) or "", tagged.group(2)
        *labels, last = [unquote(name) for name in escaped.split(".")]
        if _tag(tuple(labels), last) == tag:
            return tuple(labels), last, decode_value(text), True
        carried = _carried_names(text, tag)
        if carried is not None:
            return carried
    # Plain names ("profile.diet" of category "profile"), an older adapter's item
    # ("Profile.Diet" of category "Profile"), or a memory saved otherwise, whose key does not
    # start with its category: at the root of its scope, under its key.
    path: tuple[str, ...] = ()
    key = stored_key
    if category and stored_key.startswith(category + "."):
        path, key = tuple(category.split(".")), stored_key[len(category) + 1 :]
    current = is_plain(path, key) and memory_key_of(path, key) == stored_key
    return path, key, decode_value(text), current


def _carried_names(text: str, tag: str) -> tuple[tuple[str, ...], str, dict[str, Any], bool] | None:
    """The names and value an item with names too long for a key carries in its value."""
    carried = decode_value(text)
    names = carried.get(NAMES_FIELD)
    if set(carried) != {NAMES_FIELD, "value"} or not isinstance(names, dict):
        return None
    path, key, value = names.get("namespace"), names.get("key"), carried["value"]
    if not (isinstance(path, list) and all(isinstance(label, str) for label in path)):
        return None
    if not isinstance(key, str) or not isinstance(value, dict) or _tag(tuple(path), key) != tag:
        return None
    return tuple(path), key, value, True


def located(memory: Memory) -> tuple[tuple[str, ...], str] | None:
    """The namespace and key a memory of the service has in the store."""
    stored = read_memory(memory)
    return None if stored is None else (stored.namespace, stored.key)


def encode_value(value: dict[str, Any]) -> str:
    text = value.get("value")
    if set(value) == {"value"} and isinstance(text, str) and _is_plain_text(text):
        return text
    return json.dumps(value, ensure_ascii=False)


def decode_value(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"value": text}
    return value if isinstance(value, dict) else {"value": text}


def _is_plain_text(text: str) -> bool:
    # Stored as it is only if it reads back as itself: the service trims values, and text
    # that is a JSON object would read back as that object.
    return bool(text) and text == text.strip() and decode_value(text) == {"value": text}


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def item_of(memory: Memory, score: float | None = None) -> SearchItem | None:
    stored = read_memory(memory)
    if stored is None:
        return None
    return SearchItem(
        namespace=stored.namespace,
        key=stored.key,
        value=stored.value,
        created_at=_when(memory["created_at"]),
        updated_at=_when(memory["updated_at"]),
        score=score,
    )
