"""The served benchmark's runs across commits name each run's processor: the sessions'
machines differ, and a run is only comparable with runs on the same one."""

import copy
import json
from pathlib import Path

from bench.report_served import served_history_section

SERVED_RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results" / "served.json"


def test_each_run_across_commits_names_its_processor():
    older = json.loads(SERVED_RESULTS.read_text())
    older["meta"]["machine"]["cpu"] = "AMD EPYC"
    newer = copy.deepcopy(older)
    newer["meta"]["date"] = "2099-01-01T00:00:00+00:00"
    newer["meta"]["machine"]["cpu"] = "Intel(R) Xeon(R) Processor"
    del older["meta"]["machine"]["cpu"]  # a results file from before the CPU was recorded

    lines = served_history_section([("old.json", older), ("new.json", newer)])

    rows = [line for line in lines if line.startswith("| ") and "`" in line]
    databases = len(older["served"])
    assert len(rows) == 2 * databases
    assert all("| – |" in row for row in rows[:databases])
    assert all("| Intel(R) Xeon(R) Processor |" in row for row in rows[databases:])
