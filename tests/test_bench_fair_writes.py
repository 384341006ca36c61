"""bench.fair_writes runs end to end on a tiny size: gunicorn on a throwaway SQLite file, the
saver process, the import of its lines and the erasure of the user holding them; its table
and its section of docs/benchmarks.md render what it measured."""

from bench import fair_writes


def test_the_benchmark_runs_its_three_phases_on_a_tiny_size():
    plan = {"lines": 120, "quiet_seconds": 1.0, "workers": 1}

    result = fair_writes.run(plan)

    assert result["import"]["created"] == 120
    assert result["erasure"] == {**result["erasure"], "status": 204, "memories": 120}
    assert set(result["saves"]) == {"quiet", "import", "erasure"}
    # An erasure of 120 memories can end between two saves (one every 0.1 s): only the quiet
    # phase and the import are long enough to be sure of holding one.
    assert result["saves"]["quiet"]["n"] >= 1 and result["saves"]["import"]["n"] >= 1
    for saves in result["saves"].values():
        assert saves.get("not_2xx", 0) == 0
        if saves.get("n"):
            assert saves["p50_ms"] <= saves["p95_ms"] <= saves["max_ms"]
    results = {
        "meta": {
            "date": "2026-12-06T00:00:00+00:00",
            "command": "python -m bench fair_writes --lines 120",
            "machine": {"nproc": 2, "python": "3.11", "platform": "Linux"},
            "git": "abc1234",
            "seconds": 30.0,
        },
        "fair_writes": {"sqlite": result},
    }
    rows = [row for row in fair_writes.table(results) if row.startswith("| sqlite |")]
    assert [row.split(" | ")[1] for row in rows] == ["quiet", "import", "erasure"]
    section = "\n".join(fair_writes.fair_writes_section([("fair-writes-abc1234.json", results)]))
    assert "bench/results/fair-writes-abc1234.json" in section
    assert "120 created" in section
