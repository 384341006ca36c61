"""The rule-based extractor used when no utility model is configured. It catches explicit
statements in user messages only:

| the user writes                      | key            | value                        |
|--------------------------------------|----------------|------------------------------|
| "remember that X" / "remember: X"    | note           | X                            |
| "I prefer X" / "I'd prefer X"        | preference     | Prefers X                    |
| "my name is X" / "call me X"         | name           | Name is X / Wants to be called X |
| "I'm allergic to X"                  | allergy        | Allergic to X                |
| "I live in X"                        | home           | Lives in X                   |
| "I work as X" / "I work at X"        | work           | Works as X / Works at X      |
"""

import re

from extraction.parsing import Candidate

_END = r"(?P<x>[^.!?\n]{2,200})"
RULES = [
    (re.compile(r"\bremember(?: that|:)\s+" + _END, re.I), "note", "{x}", "note", 0.6),
    (
        re.compile(r"\bI(?:'d| would)? prefer\s+" + _END, re.I),
        "preference",
        "Prefers {x}",
        "preference",
        0.5,
    ),
    (
        re.compile(r"\bmy name is\s+(?P<x>[^\s.,!?]+(?: [A-Z][^\s.,!?]*)?)", re.I),
        "name",
        "Name is {x}",
        "personal",
        0.8,
    ),
    (
        re.compile(r"\bcall me\s+(?P<x>[^\s.,!?]+)", re.I),
        "name",
        "Wants to be called {x}",
        "personal",
        0.7,
    ),
    (
        re.compile(r"\bI(?:'m| am) allergic to\s+" + _END, re.I),
        "allergy",
        "Allergic to {x}",
        "personal",
        0.9,
    ),
    (re.compile(r"\bI live in\s+" + _END, re.I), "home", "Lives in {x}", "personal", 0.6),
    (
        re.compile(r"\bI work (?P<how>as|at)\s+" + _END, re.I),
        "work",
        "Works {how} {x}",
        "work",
        0.6,
    ),
]


def extract_by_rules(user_messages: list[str]) -> list[Candidate]:
    """Candidates for every explicit statement in the given user messages."""
    candidates = []
    for text in user_messages:
        for pattern, key, template, category, importance in RULES:
            for match in pattern.finditer(text):
                parts = {name: value.strip() for name, value in match.groupdict().items()}
                value = template.format(**parts)
                candidates.append(
                    Candidate(
                        key=key,
                        value=value[0].upper() + value[1:],
                        category=category,
                        importance=importance,
                        confidence=0.7,
                        scope="user",
                    )
                )
    return candidates
