"""The labelled relevance set's phrasings (issue 43, item 1): the data set asks in every way
products ask, in both parts, and bench/vague_phrasings.py counts each way apart."""

import json
from collections import Counter

import pytest

from bench import vague_phrasings
from bench.vague_data import PARTS, PHRASINGS, load


def test_every_phrasing_is_asked_in_both_parts_with_answered_and_unrelated_questions():
    profiles = load()  # checks every rule of the data set
    questions = [q for profile in profiles for q in profile["questions"]]

    for part in PARTS:
        for phrasing in PHRASINGS:
            kinds = Counter(
                q["kind"] for q in questions if q["part"] == part and q["phrasing"] == phrasing
            )
            answered = sum(n for kind, n in kinds.items() if kind not in ("unrelated",))
            assert answered >= 20, (part, phrasing, kinds)
            assert kinds["unrelated"] >= 5, (part, phrasing, kinds)
        multi = [q for q in questions if q["part"] == part and q["kind"] == "multi_need"]
        assert len(multi) >= 10, part
    # More than one other language, and search-box words of one to three words.
    assert len({q["lang"] for q in questions if q["kind"] == "other_language"}) >= 4
    assert all(
        1 <= len(q["query"].split()) <= 3 for q in questions if q["phrasing"] == "search_box"
    )


def write(tmp_path, question: dict):
    profile = {
        "name": "p",
        "part": "tune",
        "memories": [{"key": "a", "value": "A"}, {"key": "b", "value": "B"}],
        "questions": [{"relevant": ["a"], "unrelated": [], "part": "tune", **question}],
    }
    path = tmp_path / "set.json"
    path.write_text(json.dumps([profile]))
    return path


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ({"query": "q", "kind": "paraphrase"}, "phrasing None"),
        ({"query": "q", "kind": "paraphrase", "phrasing": "shouted"}, "phrasing 'shouted'"),
        (
            {"query": "q", "kind": "other_language", "lang": "pt", "phrasing": "tool_call"},
            "is phrased other_language",
        ),
        (
            {"query": "q", "kind": "paraphrase", "phrasing": "other_language"},
            "is of kind other_language",
        ),
        (
            {"query": "q", "kind": "multi_need", "phrasing": "third_person"},
            "names the memories it needs",
        ),
    ],
)
def test_a_question_without_a_known_phrasing_or_a_thin_multi_need_is_refused(
    tmp_path, question, message
):
    with pytest.raises(ValueError, match=message):
        load(write(tmp_path, question))


def record(kind: str, phrasing: str, relevant: list[str], returned: list[str], part="report"):
    return {
        "kind": kind,
        "phrasing": phrasing,
        "part": part,
        "relevant": relevant,
        "returned": returned,
    }


def test_figures_count_the_top_three_the_empty_answers_and_the_hints_share_per_phrasing():
    questions = [
        record("paraphrase", "tool_call", ["job"], ["city", "pet", "job", "car"]),  # 3rd: in
        record("paraphrase", "tool_call", ["job"], ["city", "pet", "car", "job"]),  # 4th: out
        record("unrelated", "tool_call", [], []),
        record("unrelated", "tool_call", [], ["city"]),
        record("multi_need", "tool_call", ["a", "b", "c"], ["a", "x", "y", "z", "b", "c"]),
        record("paraphrase", "search_box", ["pet"], ["pet"], part="tune"),
        # Results from before issue 43 have no phrasing: a person's own question.
        {**record("paraphrase", "first_person", ["pet"], []), "phrasing": None},
    ]
    del questions[-1]["phrasing"]

    figures = vague_phrasings.phrasing_figures(questions)

    tool = figures["report"]["tool_call"]
    assert tool["answered"] == {"questions": 2, "in_top": 1, "share": 0.5}
    assert tool["unrelated"] == {"questions": 2, "nothing": 1, "share": 0.5}
    assert tool["multi_need"] == {"needed": 3, "in_hint": 2, "share": 0.6667}
    assert figures["report"]["search_box"]["answered"]["questions"] == 0
    assert figures["tune"]["search_box"]["answered"]["share"] == 1.0
    assert figures["all"]["search_box"]["answered"]["questions"] == 1
    assert figures["report"]["first_person"]["answered"] == {
        "questions": 1,
        "in_top": 0,
        "share": 0.0,
    }


def test_the_table_marks_what_misses_issue_43s_targets():
    questions = [
        record("paraphrase", "search_box", ["job"], ["job"]),
        record("paraphrase", "tool_call", ["job"], []),
    ]
    data = {
        "vague": {"sqlite": {"settings": [{"setting": "current settings", "questions": questions}]}}
    }

    lines = vague_phrasings.table(data)

    rows = {tuple(cell.strip() for cell in line.split("|")[1:3]): line for line in lines}
    assert "100.0% (1/1) |" in rows[("report", "search box")]
    assert "0.0% (0/1) ✗" in rows[("report", "tool call")]
    assert rows[("report", "third person")].count("–") == 3


def test_the_docs_keep_the_settings_grid_of_the_last_run_that_had_one():
    """A run of the current settings alone (as the phrasings are measured) does not replace
    the record of how the settings were chosen."""
    from bench.common import RESULTS
    from bench.report_relevance import vague_section

    found = [
        (name, json.loads((RESULTS / name).read_text()))
        for name in ("vague-e5.json", "vague-phrasings.json")
    ]

    text = "\n".join(vague_section(found))

    assert "`python -m bench vague` (vague-e5.json" in text
    assert "similarity_floor=1.5" in text  # a row of its grid
    assert "(issue 43; vague-phrasings.json" in text
    assert "| report | tool call |" in text
