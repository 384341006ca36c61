"""The labelled relevance set (tests/data/vague_questions.json) as bench/vague.py reads it:
its classes, phrasings, topics and parts, loaded and checked. bench/relations.py loads the
relationship set (tests/data/relationship_questions.json) with the same checks, its own classes
and the entities its memories name."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "vague_questions.json"
TOP_K = 10

# The classes of question. An unrelated question names no relevant memory and labels every
# key of its profile unrelated; the other three name the memories that answer them.
CLASSES = ("unrelated", "vague", "paraphrase", "other_language", "multi_need")
RELATED = ("vague", "paraphrase", "other_language")
# How a question is asked (issue 43; bench/vague_phrasings.py reports each apart).
PHRASINGS = ("first_person", "third_person", "tool_call", "search_box", "other_language")
KINDS = CLASSES
# What an unrelated question is about.
TOPICS = ("general_knowledge", "coding", "chit_chat", "arithmetic", "gibberish")
# The data set is split by profile: every question of a profile is in the profile's part.
PARTS = ("tune", "report")
ALL = "all"
# A question of the relationship set that names one of the user's entities or a group of them
# (bench/relations.py); it may be asked in any phrasing.
RELATION = "relation"
# What a memory's entity may be (memories.models.EntityKind), and the fields a save gives it.
ENTITY_KINDS = ("person", "pet", "place", "organisation", "other")
ENTITY_FIELDS = ("name", "kind", "relation")


def load(path: Path = DATA, *, classes: tuple[str, ...] = CLASSES) -> list[dict]:
    """The profiles of the data set, checked: every labelled key is one of the profile's
    memories; no key is both relevant and unrelated; no question has more relevant memories
    than a recall returns (those would count as cut whatever the floor); the profile and each
    of its questions carry the same `part` (one of PARTS); every question's `kind` is one of
    CLASSES; an unrelated question has a `topic` of TOPICS, no relevant memory and every key
    labelled unrelated; a related question names at least one relevant memory; and an
    other-language question gives its language's two-letter code (`lang`); every question has
    a `phrasing` of PHRASINGS, "other_language" for other-language questions and for unrelated
    ones only; and a
    multi-need request names at least two memories. A memory's `entities`, when given, are a
    list of objects with a non-empty string `name`, a `kind` of ENTITY_KINDS and a string
    `relation` (both optional), nothing else. `classes` are the kinds a question may be
    (bench/relations.py: "relation", asked in any phrasing, with a `lang` when in another
    language, and "unrelated"). Raises ValueError naming the first memory or question that
    breaks a rule."""
    profiles = json.loads(Path(path).read_text())
    if not isinstance(profiles, list):
        raise ValueError(f"{path}: expected a list of profiles")
    for profile in profiles:
        keys = [memory["key"] for memory in profile["memories"]]
        for memory in profile["memories"]:
            _check_entities(memory, where=f"{profile['name']}: memory {memory['key']!r}")
        if len(set(keys)) != len(keys):
            raise ValueError(f"{profile['name']}: duplicate memory keys")
        part = profile.get("part")
        if part not in PARTS:
            raise ValueError(f"{profile['name']}: part {part!r} is not one of {PARTS}")
        for question in profile["questions"]:
            _check(
                question,
                keys,
                part,
                where=f"{profile['name']}: {question['query']!r}",
                classes=classes,
            )
    return profiles


def _check_entities(memory: dict, *, where: str) -> None:
    entities = memory.get("entities", [])
    if not isinstance(entities, list):
        raise ValueError(f"{where}: entities is not a list")
    for entity in entities:
        if not isinstance(entity, dict):
            raise ValueError(f"{where}: entity {entity!r} is not an object")
        name = entity.get("name")
        if not (isinstance(name, str) and name.strip()):
            raise ValueError(f"{where}: entity {entity!r} has no name")
        extra = sorted(set(entity) - set(ENTITY_FIELDS))
        if extra:
            raise ValueError(f"{where}: entity {name!r} has fields {extra} (only {ENTITY_FIELDS})")
        kind = entity.get("kind", "other")
        if kind not in ENTITY_KINDS:
            raise ValueError(f"{where}: entity {name!r} kind {kind!r} is not one of {ENTITY_KINDS}")
        if not isinstance(entity.get("relation", ""), str):
            raise ValueError(f"{where}: entity {name!r} relation is not a string")


def _check(
    question: dict,
    keys: list[str],
    part: str,
    *,
    where: str,
    classes: tuple[str, ...] = CLASSES,
) -> None:
    relevant, unrelated = set(question["relevant"]), set(question["unrelated"])
    unknown = (relevant | unrelated) - set(keys)
    if unknown:
        raise ValueError(f"{where} names unknown keys {sorted(unknown)}")
    if relevant & unrelated:
        raise ValueError(f"{where}: {sorted(relevant & unrelated)} in both lists")
    if len(relevant) > TOP_K:
        raise ValueError(f"{where}: more than {TOP_K} relevant memories")
    if question.get("part") != part:
        raise ValueError(f"{where}: part {question.get('part')!r}, its profile's is {part!r}")
    kind = question.get("kind")
    if kind not in classes:
        raise ValueError(f"{where}: kind {kind!r} is not one of {classes}")
    if kind == "unrelated":
        if question.get("topic") not in TOPICS:
            raise ValueError(f"{where}: topic {question.get('topic')!r} is not one of {TOPICS}")
        if relevant or unrelated != set(keys):
            raise ValueError(
                f"{where}: an unrelated question names no relevant memory and labels every "
                "key unrelated"
            )
    elif not relevant:
        raise ValueError(f"{where}: a {kind} question names the memories that answer it")
    if question.get("phrasing") not in PHRASINGS:
        raise ValueError(f"{where}: phrasing {question.get('phrasing')!r} not one of {PHRASINGS}")
    if kind == "other_language" and question["phrasing"] != "other_language":
        raise ValueError(f"{where}: an other-language question is phrased other_language")
    in_another_language = question["phrasing"] == "other_language"
    if in_another_language and kind not in ("other_language", "unrelated", RELATION):
        raise ValueError(f"{where}: a question in another language is of kind other_language")
    if kind == "multi_need" and len(relevant) < 2:
        raise ValueError(f"{where}: a multi-need request names the memories it needs")
    if kind == "other_language" or (kind == RELATION and in_another_language):
        lang = question.get("lang")
        if not (isinstance(lang, str) and len(lang) == 2 and lang.isalpha() and lang.islower()):
            raise ValueError(f"{where}: lang {lang!r} is not a two-letter language code")
