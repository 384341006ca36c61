"""The people and pets a memory's own words name as the user's, for a save that names no
entities (a product's plain `POST /api/memories`, a model's `memory_save`).

A memory is written about the user, mostly without a subject: "Wife Priya runs the bakery",
"Has two cats, Pixel and Byte", "Three children: Ade (12), Funmi (9) and baby Tobi", "Her
mother Anjali has type 2 diabetes", "Lives with partner Sam". A relation word at the head of a
clause (only possessives, counts, "has", "lives with", "visits" and the like before it) is the
user's relation; the capitalised words right after it ("Priya", "named Mia", ", Oisín,") are
its names. A relation word further in is someone else's or incidental ("Brother Daan and his
wife", "Sanne's daughter", "Coaches the twins' team", "Allergic to cats"), and is left alone:
a wrong link would bring the memory into every question about the family.

English only: other languages' memories are linked by naming their entities."""

import re

from memories.entities.names import Mention
from memories.models import EntityKind


def _themselves(words: str) -> dict[str, str]:
    return {word: word for word in words.split()}


# word as written (singular) -> the relation it names
_PEOPLE = {
    **_themselves(
        "wife husband spouse partner girlfriend boyfriend fiance fiancee son daughter child kid "
        "stepson stepdaughter baby twin mother father stepmother stepfather sister brother "
        "stepsister stepbrother half-sister half-brother grandmother grandfather grandson "
        "granddaughter grandchild aunt uncle cousin niece nephew mother-in-law father-in-law "
        "sister-in-law brother-in-law friend roommate flatmate neighbour neighbor"
    ),
    "fiancé": "fiance",
    "fiancée": "fiancee",
    "mom": "mother",
    "mum": "mother",
    "mommy": "mother",
    "dad": "father",
    "daddy": "father",
    "grandma": "grandmother",
    "granny": "grandmother",
    "grandpa": "grandfather",
    "grandkid": "grandchild",
    # "Has twin boys", "Two girls, Ana and Bea": a parent's words for their children.
    "boy": "son",
    "girl": "daughter",
}
# Named in a memory mostly by what they are to the user's work; a bare "Manager at Acme" is a
# job, so these need a name or a possessive ("His boss Linda", "Colleague Marta").
_WORK = {**_themselves("colleague coworker boss manager teammate"), "co-worker": "coworker"}
# "Dog-friendly", "Cat person": a pet at a clause's head needs a name, a count or a
# possessive ("The dog Simba", "Has a ginger cat called Biscuit", "Two dogs").
_PETS = _themselves("dog cat puppy kitten rabbit hamster parrot horse pony tortoise")
# "Has a beagle named Biscuit", "Has a rescue Rhodesian ridgeback called Bongo": a breed says
# dog or cat.
_BREEDS = {
    **dict.fromkeys(
        "beagle labrador retriever collie greyhound shepherd poodle labradoodle cockapoo "
        "terrier spaniel dachshund husky bulldog pug chihuahua corgi ridgeback xoloitzcuintle "
        "rottweiler doberman schnauzer whippet lurcher mastiff pomeranian dalmatian malinois "
        "vizsla weimaraner sheepdog samoyed akita shiba mutt".split(),
        "dog",
    ),
    **dict.fromkeys("tabby siamese persian ragdoll sphynx bengal moggy".split(), "cat"),
}
_RELATIONS = {**_PEOPLE, **_WORK, **_PETS}
_IRREGULAR_PLURALS = {
    "children": "child",
    "grandchildren": "grandchild",
    "stepchildren": "child",
    "wives": "wife",
    "babies": "baby",
    "puppies": "puppy",
    "ponies": "pony",
}

_POSSESSIVES = frozenset("his her their my our user's user’s users'".split())
_COUNTS = frozenset("a an one two three four five six seven eight nine ten both several".split())
_MODIFIERS = frozenset(
    "little older younger big baby best twin elder eldest oldest youngest late beloved "
    "adult grown-up teenage toddler newborn".split()
)
# Words that may come before a relation at a clause's head without making it someone else's.
_LEADS = frozenset(
    "the family and with has have had lives living lived visits visiting visited calls "
    "calling phones sees seeing helps helping cares caring looks after for she he they "
    "shares sharing raising raises adopted".split()
)
# "Has a ginger cat", "Has an old border collie": after a count, a few words describing it.
_FREE_AFTER_COUNT = 3
_TITLES = frozenset("dr dr. mr mr. mrs mrs. ms ms. dona don prof prof.".split())
_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*|\d+|[,:;()]", re.UNICODE)
_NAME = re.compile(r"^[^\W\d_]", re.UNICODE)


def _relation_of(word: str) -> tuple[str, bool] | None:
    """(relation, plural) of a relation word as written, or None."""
    word = word.lower().rstrip(".").removesuffix("'s").removesuffix("’s")
    if word in _RELATIONS:
        return _RELATIONS[word], False
    if word in _BREEDS:
        return _BREEDS[word], False
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word], True
    if word.endswith("s") and word[:-1] in _RELATIONS:
        return _RELATIONS[word[:-1]], True
    return None


def _is_name(token: str) -> bool:
    return bool(_NAME.match(token)) and token[0].isupper() and _relation_of(token) is None


def _kind(relation: str) -> str:
    return EntityKind.PET if relation in _PETS.values() else EntityKind.PERSON


def _names_after(tokens: list[str], start: int) -> tuple[list[str], int]:
    """The names right after a relation word at tokens[start] ("Priya", ", Oisín,", "named
    Mia", ": Ade (12), Funmi (9) and baby Tobi"), and where the reading stopped."""
    names: list[str] = []
    i = start
    while i < len(tokens):
        token = tokens[i]
        low = token.lower()
        if token == "(":  # "(12)", "(a husky)", "(Oma)"
            while i < len(tokens) and tokens[i] != ")":
                i += 1
            i += 1
            continue
        if token in (",", ":") or low in ("named", "called", "and") or low in _MODIFIERS:
            # "and" or a modifier goes on a list of names only ("Pixel and Byte", "and baby
            # Tobi"), not from a relation to another ("Brother Daan and his wife").
            if low in ("and",) + tuple(_MODIFIERS) and not names:
                break
            i += 1
            continue
        if low in _TITLES:
            i += 1
            continue
        if _is_name(token):
            names.append(token.rstrip(".").removesuffix("'s").removesuffix("’s"))
            i += 1
            continue
        break
    # Punctuation or "and" read past the last name is not the names' own.
    while i > start and tokens[i - 1].lower() in (",", ":", "and", "named", "called"):
        i -= 1
    return names, i


def _clause_mentions(tokens: list[str]) -> list[Mention]:
    found: list[Mention] = []
    possessed = counted = False
    free = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        low = token.lower()
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        relation = _relation_of(token)
        # "twin sister", "baby Tobi": a modifier when a relation word follows.
        if low in _MODIFIERS and _relation_of(after):
            i += 1
            continue
        if relation and not low.endswith(("'s", "’s", "s'")):
            name, plural = relation
            names, i = _names_after(tokens, i + 1)
            needs_more = name in _WORK.values() or name in _PETS.values()
            if needs_more and not (names or possessed or (counted and name in _PETS.values())):
                return found
            if names:
                found += [Mention(n, _kind(name), name) for n in names]
            else:
                written = {"child": "children", "grandchild": "grandchildren"}.get(name)
                label = (written or f"{name}s") if plural else name
                found.append(Mention(f"my {label}", _kind(name), name))
            # After a relation and its names, only "and"/"," then another relation of the
            # user ("Lives with his parents and grandmother"); a possessive there is the
            # named one's ("Brother Daan and his wife").
            possessed = counted = False
            free = 0
            while i < len(tokens) and tokens[i].lower() in (",", "and"):
                i += 1
            if i < len(tokens) and (tokens[i].lower() in _POSSESSIVES or not _continues(tokens, i)):
                return found
            continue
        if low in _POSSESSIVES:
            possessed = True
        elif low in _COUNTS or token.isdigit():
            counted = True
            free = _FREE_AFTER_COUNT
        elif low in _LEADS or low in ("parents", "grandparents", "kids'"):
            pass
        elif free:
            free -= 1
        elif re.fullmatch(r"[\w-]+-year-old", low):
            pass
        else:
            return found
        i += 1
    return found


def _continues(tokens: list[str], i: int) -> bool:
    """Whether tokens[i:] go on with another relation of the user: counts or modifiers, then
    a relation word."""
    while i < len(tokens) and (tokens[i].lower() in _COUNTS | _MODIFIERS):
        i += 1
    return i < len(tokens) and _relation_of(tokens[i]) is not None


# "Married to Rui", "Engaged to Ana", "Has been dating Priya": a partner named by the verb.
_PARTNERED = re.compile(
    r"^(?:happily\s+)?(?:(?P<married>married)|(?P<engaged>engaged)|(?:has\s+been\s+|is\s+)?"
    r"(?:dating|seeing))\s+(?:to\s+)?(?P<name>(?-i:[^\W\d_a-z][^\W\d_]*))",
    re.IGNORECASE | re.UNICODE,
)


def mentions_in_value(value: str) -> tuple[Mention, ...]:
    """The user's people and pets a memory's value names at the head of a clause (see the
    module docstring), each once."""
    found: list[Mention] = []
    for clause in re.split(r"[;.!?]\s+|\n+", value.strip()):
        partnered = _PARTNERED.match(clause)
        if partnered:
            relation = "partner"
            if partnered["married"] or partnered["engaged"]:
                relation = "spouse" if partnered["married"] else "fiance"
            found.append(Mention(partnered["name"], EntityKind.PERSON, relation))
            continue
        found += _clause_mentions(_TOKEN.findall(clause))
    return tuple(dict.fromkeys(found))
