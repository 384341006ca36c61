"""Reading the utility model's answer: find the JSON in whatever it wrapped it in, and
validate it against the contract
{"memories": [{"key", "value", "category", "importance", "confidence", "scope", "evidence"}]}.

`evidence` is optional: the numbers of the messages (as the prompt numbers them, from 1) that
say the memory. It is checked against the messages the model was shown: numbers that name
none of them (or are not whole numbers) are dropped, and kept in `evidence_dropped` for the
memory's create revision to record; the memory itself is kept, and a reviewer sees that it
cites nothing. A wrong `evidence` costs no retry: it is a hint, not the memory."""

import json
import math
import re
from dataclasses import dataclass

from django.conf import settings

ALLOWED_SCOPES = ("user", "persona_user", "project", "session")
_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)


class MalformedOutput(ValueError):
    """The model's answer is not JSON of the contract's shape."""


@dataclass(frozen=True)
class EntityMention:
    """A person, pet, place, organisation or other thing a candidate is about."""

    name: str
    kind: str = "other"
    relation: str = ""


@dataclass(frozen=True)
class Candidate:
    key: str
    value: str
    category: str
    importance: float
    confidence: float
    scope: str
    # The numbers of the messages that say it, as the prompt numbers them (from 1), valid ones
    # only; and what the model cited that named no message shown, as it cited it.
    evidence: tuple[int, ...] = ()
    evidence_dropped: tuple[str, ...] = ()
    entities: tuple[EntityMention, ...] = ()
    # The key of the user's current memory the model says this one gives a new value for.
    replaces: str = ""


def find_json_object(text: str) -> dict:
    """The first JSON object in the text, after reasoning blocks, prose or code fences."""
    if not isinstance(text, str) or not text.strip():
        raise MalformedOutput("empty answer")
    text = _THINKING.sub("", text)
    decoder = json.JSONDecoder()
    fallback = None
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            if "memories" in value:
                return value
            fallback = fallback or value
    if fallback is not None:
        return fallback
    raise MalformedOutput("no JSON object in the answer")


def _unit(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MalformedOutput(f"{name} is not a number")
    return min(1.0, max(0.0, float(value)))


def _text(item: dict, name: str, limit: int, *, required: bool) -> str:
    value = item.get(name, "")
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise MalformedOutput(f"{name} is not a string")
    value = value.strip()
    if required and not value:
        raise MalformedOutput(f"{name} is empty")
    return value[:limit]


def _evidence(item: dict, message_count: int | None) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The valid message numbers of a memory's `evidence` (sorted, each once) and the items
    dropped. A lone number counts as a list of one."""
    cited = item.get("evidence")
    if cited is None:
        return (), ()
    if not isinstance(cited, list):
        cited = [cited]
    valid, dropped = set(), []
    for number in cited:
        is_whole = isinstance(number, int) and not isinstance(number, bool)
        if is_whole and (message_count is None or 1 <= number <= message_count):
            valid.add(number)
        else:
            dropped.append(repr(number)[:20])
    return tuple(sorted(valid)), tuple(dropped[:10])


ENTITY_KINDS = ("person", "pet", "place", "organisation", "other")
MAX_ENTITIES = 10


def _entities(item: dict) -> tuple[EntityMention, ...]:
    """A memory's `entities`, the well-formed ones: they enrich a memory the answer states
    anyway, so a malformed one is left out rather than failing the whole answer. An unknown
    kind is "other"."""
    given = item.get("entities")
    if not isinstance(given, list):
        return ()
    found = []
    for entity in given[:MAX_ENTITIES]:
        if not isinstance(entity, dict) or not isinstance(entity.get("name"), str):
            continue
        name = entity["name"].strip()[:200]
        relation = entity.get("relation")
        relation = relation.strip()[:100] if isinstance(relation, str) else ""
        kind = str(entity["kind"]) if entity.get("kind") in ENTITY_KINDS else "other"
        if name:
            found.append(EntityMention(name=name, kind=kind, relation=relation))
    return tuple(dict.fromkeys(found))


def parse_candidates(payload: dict, *, message_count: int | None = None) -> list[Candidate]:
    """Validated candidates. Raises MalformedOutput when the shape is wrong anywhere, so a
    half-valid answer is retried rather than half-written (`evidence` aside: see above).
    `message_count` is how many messages the prompt numbered (None: not checked)."""
    memories = payload.get("memories") if isinstance(payload, dict) else None
    if not isinstance(memories, list):
        raise MalformedOutput('"memories" is missing or not a list')
    candidates = []
    for item in memories:
        if not isinstance(item, dict):
            raise MalformedOutput("a memory is not an object")
        scope = item.get("scope") or "user"
        if scope not in ALLOWED_SCOPES:
            raise MalformedOutput(f"unknown scope {scope!r}")
        evidence, dropped = _evidence(item, message_count)
        candidates.append(
            Candidate(
                key=_text(item, "key", settings.MEMORY_KEY_MAX_LENGTH, required=True),
                value=_text(item, "value", settings.MEMORY_VALUE_MAX_LENGTH, required=True),
                category=_text(
                    item, "category", settings.MEMORY_CATEGORY_MAX_LENGTH, required=False
                ),
                importance=_unit(item.get("importance", 0.5), "importance"),
                confidence=_unit(item.get("confidence", 0.7), "confidence"),
                scope=scope,
                evidence=evidence,
                evidence_dropped=dropped,
                entities=_entities(item),
                # A hint like evidence: anything but a string is no answer to it.
                replaces=_text(item, "replaces", settings.MEMORY_KEY_MAX_LENGTH, required=False)
                if isinstance(item.get("replaces"), str)
                else "",
            )
        )
    return candidates
