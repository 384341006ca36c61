"""The rule-based extractor used when no utility model is configured. It reads user messages
for explicit statements about the user, one sentence and one clause at a time:

| the user writes                                       | key               | value            |
|-------------------------------------------------------|-------------------|------------------|
| "my name is X", "my name's X", "I'm called X"         | name              | Name is X        |
| "call me X", "I go by X", "I prefer to be called X"   | preferred name    | Wants to be called X |
| "I live in X", "I'm based in X", "I moved to X"       | home              | Lives in X       |
| "I'm from X", "I come from X"                         | origin            | Comes from X     |
| "I work as X", "I'm working as X"                     | job               | Works as X       |
| "I work at X", "I work for X", "I'm employed by X"    | employer          | Works at/for X   |
| "I'm allergic to X and Y", "I have a X allergy"       | allergy to X (one each) | Allergic to X |
| "I prefer X (over Y)", "I'd rather have X",           | what X is about (1) | Prefers X (over Y) |
| "I like X better than Y"                              |                   |                  |
| "my favourite X is Y"                                 | favourite X       | Favourite X is Y |
| "remember that X", "remember: X", "keep in mind that X", | the subject of X (2) | X         |
| "don't forget that X"                                 |                   |                  |

(1) the topic of the first word of X we know (PREFERENCE_TOPICS): "preferred drink", "ui
theme", "answer style", "preferred seat", ...; else "preference: " and X's own words.
(2) "my sister's birthday is ..." gives "sister's birthday"; else "note: " and X's first
words that say something.

So unrelated facts never share a key: a key names the one fact a later statement would
replace ("I prefer coffee" replaces the preferred drink, never the ui theme). When X of a
"remember that" is itself one of the statements above, only that statement's memory is
proposed.

Facts about the people (and pets) the user names as theirs ("my sister lives in Rome", "my
son is allergic to nuts", "my wife's name is Ana") are proposed under keys of their own
("sister's home", "son's allergy to nuts", "wife's name") with values that name them
("Sister lives in Rome"), never as the user's.

A value ends where its sentence or clause ends: ".", "!", "?" and line breaks (not the dots of
"St.", "Dr.", "e.g." and other abbreviations), commas, semicolons and colons (not those of a
list: "peanuts, shellfish and latex"), "but", "because" and the like, and "and"/"or" that start
a new clause ("... Dana and I live in ..."); time phrases at the end ("now", "since 2019")
are left out. Nothing is taken from questions ("do I prefer tea?"), negations ("I don't live in
Paris anymore", "I'm not allergic to ..."), quoted speech, what someone else says or thinks
("my friend thinks I live in Paris"), conditions and wishes ("if I lived in Paris", "I want
to work as ..."), or statements about "we", "he", "she" or "they". (Splitting clauses and
judging what is a statement: extraction/statements.py.)
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from extraction.parsing import Candidate, EntityMention
from extraction.statements import (
    ADVERBS,
    DOT,
    IMPERATIVE_LEAD,
    LIST_COMMA,
    NOTE_REQUEST,
    RELATIONS,
    RELATIONS_OR_PLURAL,
    clauses,
    is_statement,
    text_before,
)
from memories.recall.words import STOP_WORDS

CONFIDENCE = 0.7
MAX_VALUE_CHARS = 120

# Time and filler at the end of a value ("Porto now", "Acme since 2019").
_TRAILING = re.compile(
    r"\s+(?:now|currently|nowadays|today|already|again|too|anymore|any\s+more|as\s+well|"
    r"these\s+days|at\s+the\s+moment|right\s+now|at\s+present|for\s+now|by\s+the\s+way|btw|"
    r"though|actually|please|thanks|thank\s+you|lol|haha|there|here|since\b.*|"
    r"for\s+(?:\d+|a|an|the\s+past|the\s+last|many|several|a\s+few|about|almost|over)\s+"
    r"(?:\w+\s+)?(?:years?|months?|weeks?|days?|decades?)\b.*|in\s+(?:19|20)\d\d\b.*|"
    r"(?:last|this|next)\s+(?:year|month|week|summer|winter|spring|autumn|fall)\b.*|"
    r"(?:\S+|a)\s+(?:years?|months?|weeks?|days?|while)\s+ago\b.*)$",
    re.I,
)
_PLACE_END = re.compile(r"\s+(?:with|because|for)\b.*$", re.I)
_EMPLOYER_END = re.compile(r"\s+(?:as\s+(?:an?|the)|with)\b.*$", re.I)

# A name: a word, then up to three capitalised ones ("Ana Silva", "Dr. Ana Costa").
_NAME_WORD = rf"[\w'{DOT}-]*"
_NAME = rf"(?P<x>(?!(?:not|no|never)\b)[^\W\d_]{_NAME_WORD}(?:\s+(?-i:[A-Z]){_NAME_WORD}){{0,3}})"
_CAPITALISED_NAME = rf"(?P<x>(?-i:[A-Z]){_NAME_WORD}(?:\s+(?-i:[A-Z]){_NAME_WORD}){{0,3}})"
_REST = r"(?P<x>.+)"
# What must be followed by more of the statement is a value at most: bounded, so a long
# clause that never completes the statement costs linear time, not quadratic.
_SHORT = rf".{{1,{MAX_VALUE_CHARS}}}?"
_PLACE = r"(?P<x>(?:the\s+)?(?-i:[A-Z]).*)"
_ME, _I_AM, _I_HAVE = (
    rf"\bI{ADVERBS}\s+",
    rf"\bI(?:'m|\s+am){ADVERBS}\s+",
    r"\bI(?:'ve|\s+have)\s+",
)
_MINE = rf"\b(?:my|our)\s+{RELATIONS}{ADVERBS}\s+"
_MINES = rf"\b(?:my|our)\s+{RELATIONS}'s\s+"
_NOT_A_PLACE_OF_WORK = (
    r"(?!(?:home|night|nights|weekends?|the\s+weekend|the\s+moment|times|least|it|this|that|"
    r"myself|fun|free|a\s+living|the\s+same)\b)"
)
_NOT_A_JOB = r"(?!(?:hard|much|long|fast|well|little|best|often|quickly|soon|many|late|early)\b)"

PREFERENCE_TOPICS = {
    "preferred drink": r"(?:green|black|herbal|iced|mint)\s+tea|tea|coffee|espresso|lattes?|"
    r"cappuccinos?|americanos?|decaf|(?:sparkling|still)\s+water|water|juice|beer|"
    r"(?:red|white)\s+wine|wine|(?:oat|soy|almond)\s+milk|milk|soda|cola|matcha|chai|"
    r"hot\s+chocolate|kombucha|smoothies?|drinks?",
    "ui theme": r"(?:dark|light|night|high[- ]contrast)\s+(?:mode|themes?|backgrounds?)",
    "answer style": r"(?:short|shorter|brief|concise|long|longer|detailed|simple)\s+"
    r"(?:answers|responses|replies|explanations)|answers|responses|replies|explanations|"
    r"bullet\s+points|"
    r"bullet\s+lists|numbered\s+lists|code\s+examples",
    "preferred seat": r"(?:window|aisle|middle)\s+seats?",
    "units": r"metric|imperial|celsius|fahrenheit|kilomet(?:er|re)s|miles",
    "preferred language": r"english|portuguese|spanish|french|german|italian|dutch|japanese|"
    r"chinese|mandarin|arabic|russian",
    "programming language": r"python|javascript|typescript|java|rust|ruby|php|kotlin|swift|"
    r"golang|c\+\+|c#",
    "contact method": r"e-?mails?|phone\s+calls?|calls|text\s+messages|texts|whatsapp|slack|"
    r"telegram|video\s+calls?",
    "diet": r"vegetarian|vegan|pescatarian|plant-based|gluten-free|halal|kosher",
    "pronouns": r"they/them|she/her|he/him|pronouns",
    "preferred time of day": r"mornings?|afternoons?|evenings?|nights?",
}
_TOPICS = [
    (topic, re.compile(rf"(?<!\w)(?:{words})(?!\w)", re.I))
    for topic, words in PREFERENCE_TOPICS.items()
]
_COMPARED = re.compile(r"\s+(?:over|rather\s+than|instead\s+of|than|to)\s+.*$", re.I)
_NOTE_SUBJECT = re.compile(
    r"^(?:(?:my|the|our)\s+)?(?!(?:i|it|this|that|there|he|she|they|we|you)\b)"
    r"(?P<subject>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3}?)\s+(?:is|are|was|were|will\s+be)\b",
    re.I,
)


@dataclass(frozen=True)
class Rule:
    """One fact and the ways of stating it. `key` and `value` are templates over a match: {x}
    (the value), {rel} and {who} (whom it is about), {how}, {what}, {be}, and the derived
    {topic} (of a preference) and {note_key}."""

    patterns: tuple[re.Pattern, ...]
    key: str
    value: str
    category: str
    importance: float
    end: re.Pattern | None = None  # where the value ends, besides its clause
    items: bool = False  # one memory per item of a list ("peanuts and shellfish")


def _rule(patterns: list[str], key: str, value: str, *args, **kw) -> Rule:
    return Rule(tuple(re.compile(p, re.I) for p in patterns), key, value, *args, **kw)


def _both(me: list[str], mine: list[str], key: str, my_value: str, their_value: str, *args, **kw):
    """The user's statement, and the same about someone of theirs ("my sister ...")."""
    return [
        _rule(me, key, my_value, *args, **kw),
        _rule(mine, "{rel}'s " + key, their_value, *args, **kw),
    ]


_SEVERITY = r"(?:(?:very|severely|highly|deathly|mildly|slightly)\s+)?"
_ALLERGEN = r"(?:(?:severe|mild|bad)\s+)?(?P<x>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+allergy\b"
_PREFERRED = rf"(?!(?:not|to\s+not|to\s+be\s+called)\b){_REST}"
_FAVOURITE = (
    r"(?:(?:all-time|absolute)\s+)?favou?rite\s+(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+(?P<be>is|are)\s+"
    + _REST
)

RULES = [
    *_both(
        [rf"\bmy\s+name(?:\s+is|'s)\s+{_NAME}", rf"{_I_AM}called\s+{_CAPITALISED_NAME}"],
        [rf"{_MINES}name(?:\s+is|'s)\s+{_NAME}", rf"{_MINE}is\s+called\s+{_CAPITALISED_NAME}"],
        "name",
        "Name is {x}",
        "{who}'s name is {x}",
        "personal",
        0.8,
    ),
    _rule(
        [
            rf"\bcall\s+me\s+{_CAPITALISED_NAME}",
            rf"{_ME}go\s+by\s+{_CAPITALISED_NAME}",
            rf"\bI(?:'d|\s+would)?{ADVERBS}\s+prefer\s+to\s+be\s+called\s+{_CAPITALISED_NAME}",
        ],
        "preferred name",
        "Wants to be called {x}",
        "personal",
        0.7,
    ),
    *_both(
        [
            rf"{_ME}live\s+in\s+{_REST}",
            rf"{_I_AM}(?:living|based)\s+in\s+{_REST}",
            rf"(?:{_ME}|{_I_HAVE}(?:just\s+)?)(?:moved|relocated)\s+to\s+{_PLACE}",
        ],
        [
            rf"{_MINE}(?:lives|is\s+living|is\s+based)\s+in\s+{_REST}",
            rf"{_MINE}(?:has\s+)?(?:just\s+)?(?:moved|relocated)\s+to\s+{_PLACE}",
        ],
        "home",
        "Lives in {x}",
        "{who} lives in {x}",
        "personal",
        0.6,
        end=_PLACE_END,
    ),
    *_both(
        [rf"{_I_AM}(?:originally\s+)?from\s+{_PLACE}", rf"{_ME}come\s+from\s+{_PLACE}"],
        [rf"{_MINE}(?:is\s+(?:originally\s+)?|comes\s+)from\s+{_PLACE}"],
        "origin",
        "Comes from {x}",
        "{who} comes from {x}",
        "personal",
        0.5,
        end=_PLACE_END,
    ),
    *_both(
        [
            rf"{_ME}work\s+as\s+{_NOT_A_JOB}{_REST}",
            rf"{_I_AM}(?:working|employed)\s+as\s+{_REST}",
            rf"{_ME}work\s+(?:at|for)\s+{_SHORT}\s+as\s+(?P<x>(?:an?|the)\s+.+)",
        ],
        [
            rf"{_MINE}works\s+as\s+{_NOT_A_JOB}{_REST}",
            rf"{_MINE}is\s+(?:working|employed)\s+as\s+{_REST}",
        ],
        "job",
        "Works as {x}",
        "{who} works as {x}",
        "work",
        0.6,
    ),
    *_both(
        [
            rf"{_ME}work\s+(?P<how>at|for)\s+{_NOT_A_PLACE_OF_WORK}{_REST}",
            rf"{_I_AM}(?:working|employed)\s+(?P<how>at|for|by)\s+{_NOT_A_PLACE_OF_WORK}{_REST}",
        ],
        [
            rf"{_MINE}works\s+(?P<how>at|for)\s+{_NOT_A_PLACE_OF_WORK}{_REST}",
            rf"{_MINE}is\s+(?:working|employed)\s+(?P<how>at|for|by)\s+{_NOT_A_PLACE_OF_WORK}{_REST}",
        ],
        "employer",
        "Works {how} {x}",
        "{who} works {how} {x}",
        "work",
        0.6,
        end=_EMPLOYER_END,
    ),
    *_both(
        [
            rf"{_I_AM}{_SEVERITY}allergic\s+to\s+{_REST}",
            rf"{_I_HAVE}an?\s+allergy\s+to\s+{_REST}",
            rf"{_I_HAVE}an?\s+{_ALLERGEN}",
        ],
        [
            rf"{_MINE}is\s+{_SEVERITY}allergic\s+to\s+{_REST}",
            rf"{_MINE}has\s+an?\s+allergy\s+to\s+{_REST}",
            rf"{_MINE}has\s+an?\s+{_ALLERGEN}",
        ],
        "allergy to {x}",
        "Allergic to {x}",
        "{who} is allergic to {x}",
        "personal",
        0.9,
        items=True,
    ),
    *_both(
        [
            rf"\bI(?:'d|\s+would)?{ADVERBS}\s+prefer\s+{_PREFERRED}",
            r"\bI(?:'d|\s+would)\s+rather\s+(?:(?:have|drink|use|get|eat|go\s+with)\s+)?"
            r"(?!(?:not|you|he|she|they|we)\b)(?P<x>.+?)(?:\s+(?:than|instead\s+of)\s+(?P<y>.+))?$",
            rf"{_ME}like\s+(?P<x>{_SHORT})\s+(?:better|more)\s+than\s+(?P<y>.+)",
        ],
        [rf"{_MINE}prefers\s+{_PREFERRED}"],
        "{topic}",
        "Prefers {x}",
        "{who} prefers {x}",
        "preference",
        0.5,
    ),
    *_both(
        [rf"\bmy\s+{_FAVOURITE}"],
        [rf"{_MINES}{_FAVOURITE}"],
        "favourite {what}",
        "Favourite {what} {be} {x}",
        "{who}'s favourite {what} {be} {x}",
        "preference",
        0.5,
    ),
]
NOTE = _rule([NOTE_REQUEST.pattern + _REST], "{note_key}", "{x}", "note", 0.6)


def extract_by_rules(user_messages: list[str]) -> list[Candidate]:
    """Candidates for every explicit statement in the given user messages, in the order
    they were made, each (key, value) once."""
    candidates, seen = [], set()
    for text in user_messages:
        for clause in clauses(text):
            for candidate in _from_clause(clause):
                if (candidate.key, candidate.value) not in seen:
                    seen.add((candidate.key, candidate.value))
                    candidates.append(candidate)
    return candidates


def extract_by_rules_cited(numbered: Sequence[tuple[int, str]]) -> list[Candidate]:
    """extract_by_rules over (number, text) user messages, each candidate citing as its
    `evidence` the numbers of the messages it was read from (every one that states it)."""
    found: dict[tuple[str, str], Candidate] = {}
    for number, text in numbered:
        for candidate in extract_by_rules([text]):
            seen = found.get((candidate.key, candidate.value))
            evidence = (*seen.evidence, number) if seen else (number,)
            found[(candidate.key, candidate.value)] = replace(candidate, evidence=evidence)
    return list(found.values())


_RELATION_MENTION = re.compile(rf"\b(?:my|our)\s+{RELATIONS_OR_PLURAL}", re.I)
_RELATION_MODIFIERS = re.compile(r"^(?:(?:little|older|younger|big|baby|best|twin)\s+)+")
_PETS = ("dog", "cat")
_EMPLOYER_VALUE = re.compile(r"^Works (?:at|for) (?P<x>.+)$")


def entity_mentions(clause: str, candidates: Sequence[Candidate]) -> tuple[EntityMention, ...]:
    """The people and pets the clause names as the user's ("my wife Sofia", "our dog Pip",
    "my sister"), and the employer of an employer candidate ("I work at Acme")."""
    found: list[EntityMention] = []
    for match in _RELATION_MENTION.finditer(clause):
        relation = _RELATION_MODIFIERS.sub("", match.group("rel").lower())
        named = match.group("named")
        found.append(
            EntityMention(
                name=named or f"my {relation}",
                kind="pet" if relation in _PETS else "person",
                relation=relation,
            )
        )
    for candidate in candidates:
        employer = _EMPLOYER_VALUE.match(candidate.value) if candidate.key == "employer" else None
        if employer:
            found.append(EntityMention(employer["x"], "organisation", "employer"))
    return tuple(dict.fromkeys(found))


def _from_clause(clause: str) -> list[Candidate]:
    candidates = _facts_of_clause(clause)
    mentions = entity_mentions(clause, candidates)
    return [replace(candidate, entities=mentions) for candidate in candidates]


def _facts_of_clause(clause: str) -> list[Candidate]:
    found = []
    for rule in RULES:
        for pattern in rule.patterns:
            for match in pattern.finditer(clause):
                if is_statement(text_before(clause, match)):
                    found.append(((match.start(), match.start("x")), _candidates(rule, match)))
    # In the order the values were written ("I work at Acme as an analyst": employer, job).
    found.sort(key=lambda item: item[0])
    candidates = [candidate for _, made in found for candidate in made]
    if candidates:
        # "Remember that I'm allergic to peanuts": the allergy, not a note besides it.
        return candidates
    note = NOTE.patterns[0].search(clause)
    before = text_before(clause, note) if note else ""
    if note and IMPERATIVE_LEAD.search(before) and is_statement(before):
        return _candidates(NOTE, note)
    return []


def _candidates(rule: Rule, match: re.Match) -> list[Candidate]:
    parts = {name: value for name, value in match.groupdict().items() if value is not None}
    raw = parts.get("x", "")
    if "y" in parts:  # "I like X better than Y"
        raw = f"{raw} over {parts['y']}"
    value = _clean(raw, end=rule.end)
    if not value:
        return []
    rel = " ".join(filter(None, [parts.get("rel", "").lower(), parts.get("named", "")]))
    fields = {
        "rel": rel.lower(),
        "who": rel,
        "how": {"by": "for"}.get(parts.get("how", "").lower(), parts.get("how", "").lower()),
        "what": parts.get("what", "").lower(),
        "be": parts.get("be", "").lower(),
    }
    items = _items(value) if rule.items else [value]
    made = []
    for item in items:
        fields["x"] = item
        if "{topic}" in rule.key:
            fields["topic"] = _preference_topic(item)
        if "{note_key}" in rule.key:
            fields["note_key"] = _note_key(item)
        value_text = rule.value.format(**fields)
        made.append(
            Candidate(
                key=rule.key.format(**{**fields, "x": item.lower()}),
                value=value_text[0].upper() + value_text[1:],
                category=rule.category,
                importance=rule.importance,
                confidence=CONFIDENCE,
                scope="user",
            )
        )
    return made


def _clean(raw: str, *, end: re.Pattern | None) -> str:
    value = raw.replace(LIST_COMMA, ",").strip()
    previous = None
    while value != previous:
        previous = value
        value = _TRAILING.sub("", value)
        if end is not None:
            value = end.sub("", value)
        value = value.strip(" \t.!?,;:'\"…)(-")
    value = value.replace(DOT, ".")
    if not re.search(r"[^\W\d_]", value) or len(value) > MAX_VALUE_CHARS:
        return ""
    return value


def _items(value: str) -> list[str]:
    """The items of a list ("peanuts, shellfish and latex"), without articles."""
    items = re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*&\s*", value)
    items = [re.sub(r"^(?:the|a|an|some)\s+", "", item.strip(), flags=re.I) for item in items]
    return [item for item in items if item]


def _preference_topic(value: str) -> str:
    """What a preference is about: the topic of its first word we know, else its own words
    (so unrelated preferences never share a key)."""
    hits = [(m.start(), topic) for topic, words in _TOPICS if (m := words.search(value))]
    if hits:
        return min(hits, key=lambda hit: hit[0])[1]
    head = _COMPARED.sub("", re.sub(r"^(?:to|the|a|an)\s+", "", value, flags=re.I))
    return "preference: " + " ".join(head.lower().split()[:4])


def _note_key(value: str) -> str:
    """A note's key: what it is about ("my sister's birthday is ..." -> "sister's birthday"),
    else "note: " and its first words that say something."""
    subject = _NOTE_SUBJECT.match(value)
    if subject:
        return subject.group("subject").lower()
    words = re.findall(r"[\w-]+(?:'\w+)?", value.lower())
    words = [w for w in words if w.split("'")[0] not in STOP_WORDS]
    return "note: " + " ".join(words[:3]) if words else "note"
