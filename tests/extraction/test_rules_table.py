"""The rule-based extractor against a table of real-looking messages (rule_cases.py): each
message gives exactly the memories expected, and precision and recall over the whole table
stay at least where they are."""

from dataclasses import replace

import pytest

from extraction.parsing import Candidate
from extraction.rules import CONFIDENCE, extract_by_rules
from tests.extraction.rule_cases import CASES, KNOWN_MISSES

# What the extractor reaches on the table; raise them when it gets better.
MIN_PRECISION = 0.987
MIN_RECALL = 0.987


def expected(memories: list[tuple]) -> list[Candidate]:
    return [
        Candidate(key, value, category, importance, confidence=CONFIDENCE, scope="user")
        for key, value, category, importance in memories
    ]


def facts_of(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates without the entities they name (tests/memories/test_entities.py)."""
    return [replace(candidate, entities=()) for candidate in candidates]


def cases():
    for text, memories in CASES:
        marks = []
        if text in KNOWN_MISSES:
            marks.append(pytest.mark.xfail(reason=KNOWN_MISSES[text], strict=True))
        yield pytest.param(text, memories, marks=marks, id=text)


@pytest.mark.parametrize(("text", "memories"), list(cases()))
def test_each_message_gives_exactly_the_memories_expected(text, memories):
    assert facts_of(extract_by_rules([text])) == expected(memories)


def test_the_table_has_60_messages_and_negatives_among_them():
    assert len(CASES) >= 60
    assert sum(1 for _, memories in CASES if not memories) >= 30
    assert set(KNOWN_MISSES) <= {text for text, _ in CASES}


def test_precision_and_recall_over_the_table_stay_at_least_where_they_are():
    right = wrong = missed = 0
    for text, memories in CASES:
        found, wanted = set(facts_of(extract_by_rules([text]))), set(expected(memories))
        right += len(found & wanted)
        wrong += len(found - wanted)
        missed += len(wanted - found)
    precision, recall = right / (right + wrong), right / (right + missed)
    print(f"rules on {len(CASES)} messages: precision {precision:.3f}, recall {recall:.3f}")

    assert precision >= MIN_PRECISION, (right, wrong)
    assert recall >= MIN_RECALL, (right, missed)


def test_all_messages_of_a_run_at_once_give_what_each_gives_alone():
    alone = [candidate for text, _ in CASES for candidate in facts_of(extract_by_rules([text]))]

    together = facts_of(extract_by_rules([text for text, _ in CASES]))
    assert together == list(dict.fromkeys(alone))
