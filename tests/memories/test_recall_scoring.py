"""The scoring function on its own: plain arguments in, numbers out."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.recall import scoring

WEIGHTS = scoring.Weights(
    relevance=0.55,
    importance=0.15,
    recency=0.15,
    frequency=0.10,
    vector_share=0.6,
    half_life_days=30.0,
    relevance_floor=0.2,
    scope_bonus={"session": 0.10, "project": 0.08, "persona_user": 0.06, "persona": 0.03},
)
NOW = timezone.now()


def score(**overrides):
    arguments = {
        "relevance_value": 0.8,
        "importance": 0.5,
        "updated_at": NOW,
        "last_accessed_at": None,
        "access_count": 0,
        "scope": "user",
        "now": NOW,
        "weights": WEIGHTS,
    }
    return scoring.score(**{**arguments, **overrides})


def test_the_parts_add_up_to_the_score():
    result = score(scope="project", access_count=7, importance=0.9)

    assert sum(result.parts().values()) == pytest.approx(result.total)
    assert result.relevance == pytest.approx(0.55 * 0.8)
    assert result.importance == pytest.approx(0.15 * 0.9)
    assert result.scope_bonus == 0.08


def test_a_candidate_below_the_relevance_floor_gets_no_score_however_important():
    assert score(relevance_value=0.19, importance=1.0, access_count=10**6) is None
    assert score(relevance_value=0.2) is not None


def test_recency_halves_every_half_life_from_the_later_of_update_and_access():
    old = NOW - timedelta(days=30)

    assert scoring.recency(updated_at=old, last_accessed_at=None, now=NOW, half_life_days=30) == (
        pytest.approx(0.5)
    )
    assert scoring.recency(
        updated_at=old - timedelta(days=30), last_accessed_at=old, now=NOW, half_life_days=30
    ) == pytest.approx(0.5)


def test_frequency_grows_with_the_log_of_accesses_and_stops_at_one():
    assert scoring.frequency(0) == 0
    assert scoring.frequency(100) == pytest.approx(1.0)
    assert scoring.frequency(10**6) == 1.0
    assert 0 < scoring.frequency(1) < scoring.frequency(10) < 1


def test_relevance_blends_vector_and_keyword_halves():
    value = scoring.relevance(similarity=0.5, keyword=1.0, confidence=1.0, vector_share=0.6)

    assert value == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)


def test_without_an_embedder_relevance_is_keyword_times_confidence():
    assert scoring.relevance(
        similarity=None, keyword=0.8, confidence=0.5, vector_share=0.6
    ) == pytest.approx(0.4)


def test_a_more_specific_scope_earns_a_larger_bonus():
    bonuses = [
        score(scope=s).scope_bonus
        for s in ("user", "persona", "persona_user", "project", "session")
    ]

    assert bonuses == sorted(bonuses)
    assert len(set(bonuses)) == 5
