"""Entity evidence: a query that names one of the user's entities (its name, an alias, its
relation: "Sofia", "my wife", "esposa") or a group of relations ("family", "kids", "pets",
"colleagues", and their words in other languages) brings that entity's memories in as
candidates, with evidence 1 for an entity named and GROUP_EVIDENCE for one of a group. A
query that names none changes nothing: one small query of the user's entities, then nothing.

Relation words and group words are compared folded (case and accents aside) as whole words."""

import re
from collections.abc import Sequence
from uuid import UUID

from memories.entities.names import fold
from memories.models import CarrierIds, Entity, EntityKind

GROUP_EVIDENCE = 0.8

# A relation word of another language, and the relation it is (English, as entities keep it).
RELATION_WORDS: dict[str, str] = {
    **{word: "wife" for word in ("esposa", "mulher", "femme", "frau", "moglie", "vrouw", "zona")},
    **{word: "husband" for word in ("esposo", "marido", "mari", "ehemann")},
    **{word: "son" for word in ("hijo", "filho", "fils", "sohn", "figlio", "zoon", "syn")},
    **{word: "daughter" for word in ("hija", "filha", "fille", "tochter", "figlia", "dochter")},
    **{word: "mother" for word in ("madre", "mae", "mutter", "moeder", "mom", "mum")},
    **{word: "father" for word in ("padre", "pai", "pere", "vater", "vader", "dad")},
    **{word: "sister" for word in ("hermana", "irma", "soeur", "schwester", "sorella", "zus")},
    **{word: "brother" for word in ("hermano", "irmao", "frere", "bruder", "fratello", "broer")},
    **{word: "dog" for word in ("perro", "cao", "cachorro", "chien", "hund", "hond")},
    **{word: "cat" for word in ("gato", "katze", "gatto", "kat")},
    **{word: "partner" for word in ("pareja", "companheiro", "companheira", "compagnon")},
}
FAMILY = {
    "wife",
    "husband",
    "partner",
    "spouse",
    "son",
    "daughter",
    "child",
    "kid",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "sister",
    "brother",
    "grandmother",
    "grandma",
    "grandfather",
    "grandpa",
    "grandson",
    "granddaughter",
    "aunt",
    "uncle",
    "cousin",
    "niece",
    "nephew",
    "fiance",
    "fiancee",
    "stepson",
    "stepdaughter",
    "baby",
}
KIDS = {"son", "daughter", "child", "kid", "stepson", "stepdaughter", "baby"}
PETS = {"dog", "cat", "pet", "puppy", "kitten"}
COLLEAGUES = {"colleague", "coworker", "co-worker", "boss", "manager", "teammate", "employee"}
# A group word, and the relations it gathers (a family's pets are family too).
GROUP_WORDS: dict[str, set[str]] = {
    **{
        word: FAMILY | PETS
        for word in (
            "family",
            "familia",
            "famille",
            "familie",
            "famiglia",
            "gezin",
            "rodzina",
            "relatives",
        )
    },
    **{
        word: KIDS
        for word in (
            "kids",
            "children",
            "childs",
            "hijos",
            "ninos",
            "filhos",
            "criancas",
            "enfants",
            "kinder",
            "kinderen",
            "figli",
            "bambini",
            "dzieci",
        )
    },
    **{
        word: PETS
        for word in (
            "pets",
            "mascotas",
            "mascota",
            "animais",
            "animaux",
            "haustiere",
            "huisdieren",
            "animali",
        )
    },
    **{
        word: COLLEAGUES
        for word in (
            "colleagues",
            "coworkers",
            "co-workers",
            "colegas",
            "companeros",
            "collegues",
            "kollegen",
            "collegas",
            "colleghi",
            "team",
        )
    },
}
_WORD = re.compile(r"[\w-]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(fold(text).replace("'s ", " ").replace("’s ", " "))


def _relation_of(word: str) -> str:
    return RELATION_WORDS.get(word, word)


def matched_entities(query: str, entities: Sequence[tuple]) -> dict[UUID, float]:
    """{entity id: evidence} of (id, kind, relation, names_folded) rows the query names."""
    words = _words(query)
    if not words:
        return {}
    text = f" {' '.join(words)} "
    relations = {_relation_of(word) for word in words}
    groups = set().union(*(GROUP_WORDS[word] for word in words if word in GROUP_WORDS))
    found: dict[UUID, float] = {}
    for entity_id, kind, relation, names in entities:
        relation = fold(relation)
        if any(f" {name} " in text for name in names) or (relation and relation in relations):
            found[entity_id] = 1.0
        elif (relation and relation in groups) or (kind == EntityKind.PET and groups & PETS):
            found[entity_id] = GROUP_EVIDENCE
    return found


def entity_evidence(*, query: str, scopes: Sequence[CarrierIds]) -> dict[UUID, float]:
    """{memory id: entity evidence} of the memories linked to the entities the query names,
    among the entities of the scopes' users (the memories' scopes are checked later, with
    the other candidates')."""
    users = {scope.user_id for scope in scopes if scope.user_id is not None}
    if not users:
        return {}
    rows = list(
        Entity.objects.filter(user_id__in=users).values_list(
            "id", "kind", "relation", "names_folded"
        )
    )
    matched = matched_entities(query, rows) if rows else {}
    if not matched:
        return {}
    links = Entity.memories.through.objects.filter(entity_id__in=matched).values_list(
        "memory_id", "entity_id"
    )
    evidence: dict[UUID, float] = {}
    for memory_id, entity_id in links:
        evidence[memory_id] = max(evidence.get(memory_id, 0.0), matched[entity_id])
    return evidence
