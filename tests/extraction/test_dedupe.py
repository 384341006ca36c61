"""extraction/dedupe.py: is a candidate new, a duplicate, or a contradiction?"""

from datetime import timedelta

from django.utils import timezone

from extraction.dedupe import classify, normalise
from memories.models import Memory, Status

THRESHOLD = 0.92


def existing(key: str, value: str, *, status: str = Status.ACTIVE, age_days: int = 0) -> Memory:
    """An in-memory row, as the service hands it to classify()."""
    return Memory(
        key=key,
        value=value,
        status=status,
        created_at=timezone.now() - timedelta(days=age_days),
    )


def decide(key: str, value: str, rows: list[Memory], similarity: dict | None = None):
    return classify(
        key=key,
        value=value,
        existing=rows,
        similarity=similarity or {},
        duplicate_similarity=THRESHOLD,
    )


def test_normalise_ignores_case_punctuation_and_spacing():
    assert normalise("  Lives in LISBON,  Portugal! ") == "lives in lisbon portugal"


def test_nothing_to_compare_with_is_new():
    assert decide("city", "Lives in Lisbon", []).kind == "new"


def test_the_same_value_written_differently_is_a_duplicate():
    row = existing("home", "Lives in Lisbon")

    decision = decide("city", "lives in lisbon.", [row])

    assert (decision.kind, decision.existing) == ("duplicate", row)


def test_a_vector_near_duplicate_is_a_duplicate():
    far, near = existing("a", "Likes jazz"), existing("b", "Enjoys jazz music a lot")

    decision = decide("music", "Likes jazz music", [far, near], {far.id: 0.5, near.id: 0.95})

    assert (decision.kind, decision.existing) == ("duplicate", near)


def test_similarity_below_the_threshold_is_not_a_duplicate():
    row = existing("music", "Enjoys jazz")

    assert decide("sport", "Plays tennis", [row], {row.id: 0.91}).kind == "new"


def test_the_same_key_with_another_value_is_a_conflict():
    row = existing("City", "Lives in Lisbon")

    decision = decide("city", "Lives in Porto", [row], {row.id: 0.75})

    assert (decision.kind, decision.existing) == ("conflict", row)


def test_a_conflict_replaces_the_active_memory_before_a_pending_one():
    active = existing("city", "Lives in Lisbon", age_days=30)
    pending = existing("city", "Lives in Braga", status=Status.PENDING_REVIEW)

    decision = decide("city", "Lives in Porto", [pending, active])

    assert decision.existing == active


def test_a_conflict_replaces_the_newest_of_several_active_memories():
    older = existing("city", "Lives in Lisbon", age_days=30)
    newer = existing("city", "Lives in Braga", age_days=1)

    assert decide("city", "Lives in Porto", [older, newer]).existing == newer


def test_an_exact_duplicate_wins_over_a_conflict():
    same_key = existing("city", "Lives in Lisbon")
    same_value = existing("home", "Lives in Porto")

    decision = decide("city", "Lives in Porto", [same_key, same_value])

    assert (decision.kind, decision.existing) == ("duplicate", same_value)
