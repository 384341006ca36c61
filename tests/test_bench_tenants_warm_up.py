"""bench.tenants: the untimed searches before a band's timed ones come from the same users,
with texts that user is not timed with where there are any, and their summary is reported
beside the timings."""

from types import SimpleNamespace

from bench.tenants import timed_picks, warm_up_picks
from bench.tenants_tables import _again_table, _warm_up_table


def test_warm_up_searches_are_by_the_timed_users_with_texts_they_are_not_timed_with():
    queries = [f"question {i}" for i in range(20)]
    users = [SimpleNamespace(external_id=name) for name in ["heavy", "light", "heavy", "heavy"]]
    picks = timed_picks(users, queries)

    warm_up = warm_up_picks(picks, queries, rounds=3)

    assert len(warm_up) == 3 * len(picks)
    assert [user for user, _ in warm_up] == [user for user, _ in picks] * 3
    timed = {(user, index) for user, index in picks}
    assert not timed & set(warm_up)
    heavy_texts = [index for user, index in warm_up if user == "heavy"]
    assert len(set(heavy_texts)) == len(heavy_texts)  # 9 searches, 17 texts left to use


def test_a_user_timed_with_every_text_warms_up_with_those_texts():
    queries = ["first question", "second question"]
    users = [SimpleNamespace(external_id="u")] * 2
    picks = timed_picks(users, queries)

    assert warm_up_picks(picks, queries, rounds=2) == [("u", 0), ("u", 1), ("u", 0), ("u", 1)]


def test_the_warm_up_is_tabled_only_for_runs_that_had_one():
    summary = {"p50_ms": 30.0, "p95_ms": 90.0, "rounds": 3}
    with_warm_up = {"tenants": {"postgresql": {"search": {"heavy": {"warm_up": summary}}}}}
    without = {"tenants": {"postgresql": {"search": {"heavy": {"p50_ms": 1.0}}}}}

    lines = _warm_up_table(with_warm_up)

    assert "| postgresql | 30.0 / 90.0 |" in lines
    assert any("3 times as often" in line for line in lines)
    assert _warm_up_table(without) == []


def test_the_second_pass_and_blocks_read_are_tabled_per_band_when_measured():
    band = {"p50_ms": 20.0, "p95_ms": 36.0, "again": {"p50_ms": 18.0, "p95_ms": 22.0}}
    results = {
        "tenants": {
            "postgresql": {
                "search": {"heavy": {**band, "blocks_per_search": {"read": 12.5, "hit": 900.0}}}
            },
            "sqlite": {"search": {"heavy": band}},
        }
    }
    older = {"tenants": {"postgresql": {"search": {"heavy": {"p50_ms": 1.0}}}}}

    lines = _again_table(results)

    assert "| postgresql | heavy | 20.0 / 36.0 | 18.0 / 22.0 | 12.5, 900 |" in lines
    assert "| sqlite | heavy | 20.0 / 36.0 | 18.0 / 22.0 | – |" in lines
    assert _again_table(older) == []
