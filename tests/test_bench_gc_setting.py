"""A served benchmark run records whether its server collected garbage between requests, and
its tables say so when it did not (GC_BETWEEN_REQUESTS, config/collect_between_requests.py)."""

import json
from pathlib import Path

import pytest

from bench.common import gc_between_requests
from bench.served_tables import markdown

SERVED_RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results" / "served.json"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, True), ("true", True), ("1", True), ("false", False), ("off", False), ("0", False)],
)
def test_the_setting_is_read_as_the_service_reads_it(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("GC_BETWEEN_REQUESTS", raising=False)
    else:
        monkeypatch.setenv("GC_BETWEEN_REQUESTS", value)

    assert gc_between_requests() is expected


def test_the_served_tables_say_when_the_collector_ran_on_pythons_schedule():
    results = json.loads(SERVED_RESULTS.read_text())
    results["meta"]["gc_between_requests"] = False
    assert "GC_BETWEEN_REQUESTS=false" in markdown(results)

    results["meta"]["gc_between_requests"] = True
    assert "GC_BETWEEN_REQUESTS" not in markdown(results)
