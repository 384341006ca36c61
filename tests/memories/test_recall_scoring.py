"""The scoring function on its own: plain arguments in, numbers out."""

import dataclasses
import uuid
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
    similarity_floor=2.0,
    near_best_floor=0.0,
    near_best_band=1.0,
    keyword_floor=0.3,
    about_user_weight=1.5,
    about_user_floor=0.5,
    about_user_cap=float("inf"),
    keyword_weight=1.0,
    similarity_span=8.0,
    scope_bonus={"session": 0.10, "project": 0.08, "persona_user": 0.06, "persona": 0.03},
    adjustment_band=0.15,
    keyword_pass=0.8,
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
    evidence = 0.55 * 0.8
    assert result.relevance == pytest.approx(evidence * (1 - 0.15))
    # Importance's share of the band: 0.15 of 0.15 + 0.15 + 0.10.
    assert result.importance == pytest.approx(evidence * 2 * 0.15 * 0.15 / 0.40 * 0.9)
    assert result.scope_bonus == pytest.approx(0.08 * (result.total - result.scope_bonus))


def test_importance_recency_and_popularity_move_a_score_within_the_band_of_its_relevance():
    evidence = 0.55 * 0.8
    least = score(importance=0.0, updated_at=NOW - timedelta(days=3650))
    most = score(importance=1.0, access_count=10**6)

    assert least.total == pytest.approx(evidence * 0.85, rel=1e-3)
    assert most.total == pytest.approx(evidence * 1.15)


def test_an_important_fresh_memory_never_passes_one_with_clearly_stronger_evidence():
    # "would steak suit my dinner plans?": the diet answers it, the backend stack does not.
    answering = score(relevance_value=0.5, importance=0.0, updated_at=NOW - timedelta(days=900))
    # More than (1 + 0.15) / (1 - 0.15) = 1.35 times the evidence: clearly stronger.
    important = score(relevance_value=0.36, importance=1.0, access_count=500)

    assert answering.total > important.total
    # Of about the same evidence, the more important one comes first.
    assert score(relevance_value=0.5, importance=1.0).total > answering.total


def test_without_importance_recency_and_popularity_weights_relevance_alone_scores():
    flat = dataclasses.replace(WEIGHTS, importance=0.0, recency=0.0, frequency=0.0)
    result = score(weights=flat, importance=1.0)

    assert result.total == pytest.approx(0.55 * 0.8)
    assert result.importance == result.recency == result.frequency == 0.0


def relevant(similarity, evidence, best=None, about_user=0.0):
    return scoring.is_relevant(
        similarity=similarity,
        best_similarity=best,
        keyword_evidence=evidence,
        about_user=about_user,
        weights=WEIGHTS,
    )


def test_a_candidate_is_relevant_when_similarity_and_keyword_evidence_add_up_to_the_floor():
    # Similarities are calibrated: spreads above the question's background.
    assert relevant(2.0, 0.0, best=5.0)
    assert relevant(1.5, 0.5, best=5.0)
    assert not relevant(1.4, 0.5, best=5.0)
    # Without an embedder only keyword evidence counts, and no match is never relevant.
    assert relevant(None, 0.3)
    assert not relevant(None, 0.0)
    assert not relevant(None, 0.29)


def test_a_memory_holding_most_of_the_query_words_weight_is_relevant_on_that_alone():
    # "jazz" typed in a search box and "Loves 1970s jazz fusion": a word stands in the memory,
    # however a terse query's similarity and about-user odds read.
    assert relevant(0.5, 1.0, best=0.5, about_user=-3.0)
    assert relevant(0.5, 0.8, best=0.5, about_user=-3.0)
    assert not relevant(0.5, 0.7, best=0.5, about_user=-3.0)


def test_a_question_about_the_user_needs_less_similarity_and_one_about_the_world_more():
    assert relevant(1.0, 0.0, best=5.0, about_user=1.0)  # 1.0 + 1.5 · 1.0 >= 2.0
    # "who wrote the Odyssey?" and a car called Odyssey: close, but not about the user.
    assert not relevant(4.0, 0.5, best=4.0, about_user=-2.0)
    assert relevant(6.0, 0.5, best=6.0, about_user=-2.0)


def test_the_about_user_cap_limits_what_a_question_plainly_about_the_user_brings_along():
    # "where do I live?" is about the user beyond doubt; the city is near, the editor is not.
    assert relevant(0.4, 0.0, best=3.0, about_user=4.0)  # no cap by default
    capped = dataclasses.replace(WEIGHTS, about_user_cap=1.0)
    arguments = {"best_similarity": 3.0, "keyword_evidence": 0.0, "about_user": 4.0}
    assert scoring.is_relevant(similarity=3.0, weights=capped, **arguments)
    assert not scoring.is_relevant(similarity=0.4, weights=capped, **arguments)


def test_a_weak_similarity_counts_near_the_best_one_of_a_vague_question_about_the_user():
    # "what should I cook tonight?": the diet is the nearest memory, far as it is.
    assert relevant(0.2, 0.0, best=0.2, about_user=0.6)
    assert relevant(0.2, 0.0, best=1.1, about_user=0.6)
    assert not relevant(0.2, 0.0, best=1.3, about_user=0.6)  # more than the band below
    assert not relevant(-0.1, 0.0, best=-0.1, about_user=0.6)  # below the near-best floor
    assert not relevant(0.2, 0.0, best=0.2, about_user=0.4)  # not clearly about the user


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
    value = scoring.relevance(
        similarity=4.0, keyword=1.0, confidence=1.0, vector_share=0.6, span=8.0
    )

    assert value == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)


def test_the_vector_half_reads_the_calibrated_similarity_over_the_span_capped_at_one():
    def vector_half(similarity):
        return scoring.relevance(
            similarity=similarity, keyword=0.0, confidence=1.0, vector_share=1.0, span=8.0
        )

    assert vector_half(12.0) == 1.0
    assert vector_half(-3.0) == 0.0


def test_without_an_embedder_relevance_is_keyword_times_confidence():
    assert scoring.relevance(
        similarity=None, keyword=0.8, confidence=0.5, vector_share=0.6, span=8.0
    ) == pytest.approx(0.4)


def test_a_more_specific_scope_earns_a_larger_bonus():
    bonuses = [
        score(scope=s).scope_bonus
        for s in ("user", "persona", "persona_user", "project", "session")
    ]

    assert bonuses == sorted(bonuses)
    assert len(set(bonuses)) == 5


def candidate(number: int, *, importance: float, days_old: int = 0, similarity: float = 0.0):
    from memories.recall.candidates import Candidate

    return Candidate(
        memory_id=uuid.UUID(int=number),
        similarity=similarity,
        keyword=0.0,
        keyword_evidence=0.0,
        scope="user",
        importance=importance,
        confidence=1.0,
        updated_at=NOW - timedelta(days=days_old),
        last_accessed_at=None,
        access_count=0,
    )


def test_memories_of_equal_score_go_by_importance_then_the_latest_update_then_id():
    from memories.recall.calibration import Calibration
    from memories.recall.recall import rank

    # A question plainly about the user lets through memories with no evidence (score 0).
    candidates = [
        candidate(1, importance=0.2),
        candidate(2, importance=0.9, days_old=40),
        candidate(3, importance=0.9, days_old=2),
        candidate(4, importance=0.2),
    ]
    about_the_user = Calibration(mean=0.5, spread=0.1, about_user=5.0)

    ranked = rank(candidates, weights=WEIGHTS, now=NOW, top_k=4, calibration=about_the_user)

    assert [memory_id.int for memory_id, _ in ranked] == [3, 2, 1, 4]
    assert {score.total for _, score in ranked} == {0.0}
