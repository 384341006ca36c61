"""The served benchmark times a filtered search beside the unfiltered one (issue 46): its
table gives both p95s, their ratio (the issue's bound is 1.5) and how many results came back."""

import copy
import json
from pathlib import Path

from bench.served_roles import FILTERED_APP, FILTERED_EVERY
from bench.served_tables import markdown

SERVED_RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results" / "served.json"


def test_the_table_sets_the_filtered_search_beside_the_unfiltered_one():
    results = json.loads(SERVED_RESULTS.read_text())
    database, run = next(iter(results["served"].items()))
    filtered = copy.deepcopy(run["search"])
    filtered["http"]["p95_ms"] = run["search"]["http"]["p95_ms"] * 1.25
    filtered.update(
        {
            "filter": {"metadata.app": FILTERED_APP},
            "returned_mean": 9.5,
            "ungated_returned": {"searches": 20, "min": 10},
        }
    )
    run["search_filtered"] = filtered
    results["served"] = {database: run}

    table = markdown(results)

    row = next(
        line for line in table.splitlines() if line.startswith(f"| {database} |") and "1.25" in line
    )
    assert row.endswith("| 9.5 / 10 |"), row
    assert FILTERED_EVERY == 100  # the filter matches 1% of the memories
