"""facts.decide and normalise (memories.models) alone: when a write is the same fact, and what it
replaces."""

import uuid
from dataclasses import dataclass, field

from memories.facts import decide
from memories.models import normalise


@dataclass
class Held:
    value: str
    importance: float = 0.5
    confidence: float = 1.0
    id: uuid.UUID = field(default_factory=uuid.uuid4)


def test_normalise_folds_case_punctuation_underscores_and_spaces():
    assert normalise("  Preferred_Language ") == "preferred language"
    assert normalise("Lives in LISBON,  Portugal!") == "lives in lisbon portugal"
    assert normalise("Straße") == normalise("STRASSE")
    assert normalise("Vit en Lisboa") != normalise("Vit à Lisboa")


def test_the_same_value_is_the_memory_that_says_it():
    held = Held("Likes green tea")

    decision = decide(
        value="likes green tea.", importance=0.5, confidence=1.0, replace=True, holders=[held]
    )

    assert decision.kind == "existing" and decision.existing is held
    assert decision.raised == {} and decision.superseded == ()


def test_only_rising_numbers_are_raised():
    held = Held("Vegetarian", importance=0.6, confidence=0.4)

    decision = decide(
        value="Vegetarian", importance=0.5, confidence=0.9, replace=True, holders=[held]
    )

    assert decision.raised == {"confidence": 0.9}


def test_another_value_replaces_every_holder_unless_replace_is_false():
    holders = [Held("Allergic to peanuts"), Held("Allergic to shellfish")]

    replacing = decide(value="None", importance=0.5, confidence=1, replace=True, holders=holders)
    keeping = decide(value="None", importance=0.5, confidence=1, replace=False, holders=holders)

    assert replacing.kind == "create" and replacing.superseded == tuple(holders)
    assert keeping.kind == "create" and keeping.superseded == ()


def test_a_key_nobody_holds_is_created():
    decision = decide(value="x", importance=0.5, confidence=1, replace=True, holders=[])

    assert decision.kind == "create" and decision.superseded == ()
