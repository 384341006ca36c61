"""Where a user's message states something of their own: its sentences and clauses (the
statements of a message, questions left out), and whether what precedes a phrase in its
clause leaves it the user's own statement (no negation, condition, wish or someone else's
words). The rule table of extraction/rules.py reads the clauses these give."""

import re

# How far back before a phrase a negation or a reporting verb is looked for.
PREFIX_CHARS = 200

# Stand-ins, while sentences and clauses are split, for a dot that ends no sentence ("St.")
# and a comma that ends no clause (one of a list). Private-use characters: never typed.
DOT, LIST_COMMA = "\ue000", "\ue001"
_ABBREVIATION = re.compile(
    r"\b(?:St|Dr|Mr|Mrs|Ms|Mx|Prof|Jr|Sr|Mt|Ft|Ave|Rd|Blvd|Ltd|Inc|Corp|vs|etc|approx|dept)\."
    r"|\b(?:[A-Za-z]\.){2,}"  # e.g. i.e. a.m. U.S.
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Quoted speech is someone's words, not a statement of the user's; a quoted single word is
# only a name or a term ('call me "Bea"') and stays, unquoted.
_CURLY_QUOTED = re.compile(r"“([^”\n]*)”|‘([^’\n]*)’")
_QUOTED = re.compile(r"\"([^\"\n]*)\"|(?<!\w)'([^'\n]*)'(?!\w)")  # not the ' of "I'm"

# A word that starts a clause of its own after "and", "or", "so", "then".
_NEW_CLAUSE = (
    r"(?:I|I'm|I'd|I've|I'll|my|we|you|he|she|they|it|our|his|her|their|there|this|that|also|"
    r"then|now|please|remember|call|love|like|hate|enjoy|have|has|am|is|work|works|live|lives|"
    r"prefer|prefers|want|need|comes|moved|"
    r"usually|often|sometimes|never|always|really|still|just|don't|do|did|can|could|would|will)\b"
)
_LIST_ITEM = rf"(?!{_NEW_CLAUSE})[\w'-]+(?:\s+(?!{_NEW_CLAUSE})[\w'-]+)?"
_LIST = re.compile(rf"\b{_LIST_ITEM}(?:,\s+{_LIST_ITEM})+,?\s+(?:and|or)\s+{_LIST_ITEM}\b", re.I)
_CLAUSE_BREAK = re.compile(
    r"\s*[,;:](?:\s+|$)|\s+[-–—]+\s+|\s*[()]\s*"
    r"|\s+(?:but|because|although|though|whereas|while|which|who|except)\s+"
    rf"|\s+(?:and|or|so|then)\s+(?={_NEW_CLAUSE})"
    # A condition starts a clause and stays in it, so what it governs is seen as conditional.
    r"|\s+(?=(?:if|when|whenever|unless|whether|once|until)\b)",
    re.I,
)

# What before a statement, in its clause, makes it not a statement of the user's.
_NEGATED = re.compile(r"\b(?:not|never|nor|neither|forget|forgot|stop|stopped|doubt)\b|n't\b", re.I)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|unless|wish|suppose|supposing|imagine|pretend|assume|assuming|maybe|"
    r"perhaps|might|hope|hoping|dream|when|once|until|in case|as if)\b",
    re.I,
)
_REPORTED = re.compile(
    r"\b(?P<who>\w+)\s+(?:\w+\s+)?(?:says?|said|thinks?|thought|believes?|believed|told|tells|"
    r"claims?|claimed|asked|asks|insists?|insisted|mentioned|wrote|writes|assumes?|assumed|"
    r"guess(?:es|ed)?|heard)\b",
    re.I,
)
_ACCORDING_TO = re.compile(r"\baccording\s+to\b", re.I)
# "Remember that ..." is a request only as an imperative, not in "I remember that I ...".
NOTE_REQUEST = re.compile(
    r"\b(?:remember|keep\s+in\s+mind|don't\s+forget|do\s+not\s+forget|never\s+forget)\s+that\s+",
    re.I,
)
IMPERATIVE_LEAD = re.compile(
    r"(?:^|\b(?:please|just|also|and|so|oh|hey|ok|okay|btw|can\s+you|could\s+you|would\s+you|"
    r"will\s+you|you\s+should|you\s+must|you\s+need\s+to|want\s+you\s+to|need\s+you\s+to|"
    r"make\s+sure\s+(?:to|you)))\s*$",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:(?:do|does|did|am|is|are|was|were|have|has|can|could|should|would|will)\s+(?:I|my|you)"
    r"|(?:where|what|who|why|how|which)\s+(?:do|does|did|am|is|are|was|were|have|has|can|"
    r"should|would|will))\b",
    re.I,
)
_REQUEST_QUESTION = re.compile(
    r"^(?:please\s+)?(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:remember|keep\s+in\s+mind)"
    r"\b",
    re.I,
)


ADVERB = (
    r"(?:really|also|still|actually|now|currently|just|usually|generally|mostly|much|"
    r"definitely|strongly|always|totally|absolutely|certainly|honestly|personally|mainly|"
    r"normally|basically|already)"
)
ADVERBS = rf"(?:\s+{ADVERB})*"
_RELATION = (
    r"(?P<rel>(?:(?:little|older|younger|big|baby|best|twin)\s+)?(?:ex-)?(?:sister|brother|"
    r"mother|mom|mum|father|dad|wife|husband|partner|son|daughter|boyfriend|girlfriend|fianc[eé]e?|"
    r"friend|boss|manager|colleague|coworker|co-worker|roommate|flatmate|neighbou?r|grandmother|"
    r"grandma|grandfather|grandpa|aunt|uncle|cousin|niece|nephew|kid|child|dog|cat))"
)
_NAMED = r"(?:,?\s+(?P<named>(?-i:[A-Z][a-z]+)))?"
# A whole word: "our friendship", "my neighbourhood" and "my childhood" name nobody.
RELATIONS = rf"{_RELATION}\b{_NAMED}"
# The same, or its plural ("my kids", "our dogs"), `rel` the singular.
RELATIONS_OR_PLURAL = rf"{_RELATION}s?\b{_NAMED}"
# A clause that starts with a verb ("... and work for the NHS") has the subject of the one
# before it; it is carried over with what preceded it there, negations and all.
_SUBJECT = re.compile(rf"\bI\b|\b(?:my|our)\s+{RELATIONS}", re.I)
_BARE_VERB = re.compile(
    rf"^(?:{ADVERB}\s+)*(?:work|works|live|lives|prefer|prefers|moved|relocated|come|"
    r"comes|go|am|is|have|has|like|would)\b",
    re.I,
)


def clauses(text: str):
    """The clauses of a message's statements: questions are left out, except requests to
    remember ("could you remember that ...?")."""
    text = text.replace(DOT, "").replace(LIST_COMMA, "")
    text = _CURLY_QUOTED.sub(_unquote, text).replace("’", "'")
    text = _QUOTED.sub(_unquote, text)
    text = _ABBREVIATION.sub(lambda m: m.group().replace(".", DOT), text)
    text = re.sub(r"\b(remember|keep\s+in\s+mind)\s*:\s*", r"\1 that ", text, flags=re.I)
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        is_request = bool(_REQUEST_QUESTION.match(sentence))
        is_question = sentence.rstrip(" )\"'").endswith("?") or _QUESTION_START.match(sentence)
        if not sentence or (is_question and not is_request):
            continue
        sentence = _LIST.sub(lambda m: m.group().replace(",", LIST_COMMA), sentence)
        carried = ""
        for clause in _CLAUSE_BREAK.split(sentence):
            clause = (clause or "").strip()
            if not clause:
                continue
            if carried and _BARE_VERB.match(clause):
                clause = f"{carried} {clause}"
            subjects = list(_SUBJECT.finditer(clause))
            carried = clause[: subjects[-1].end()] if subjects else ""
            yield clause


def _unquote(match: re.Match) -> str:
    quoted = next(group for group in match.groups() if group is not None)
    return quoted if quoted and not re.search(r"\s", quoted.strip()) else " "


def text_before(clause: str, match: re.Match) -> str:
    """What precedes a match in its clause, as far back as a negation or a reporting verb
    could govern it: a bounded window, so a long clause with many matches costs linear time."""
    return clause[max(0, match.start() - PREFIX_CHARS) : match.start()]


def is_statement(before: str) -> bool:
    """Whether what precedes a match in its clause leaves it a statement of the user's: no
    negation, condition or wish, and nobody else's words (a request to remember is cut off
    first: "don't forget that I ..." is no negation)."""
    requests = list(NOTE_REQUEST.finditer(before))
    if requests:
        before = before[requests[-1].end() :]
    if _NEGATED.search(before) or _HYPOTHETICAL.search(before) or _ACCORDING_TO.search(before):
        return False
    # Reported words count only as the user's own: "I said I live in ...", "as I told you".
    return all(match.group("who").lower() == "i" for match in _REPORTED.finditer(before))
