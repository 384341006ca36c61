"""The relationship set (issue 45): tests/data/relationship_questions.json loads and passes the
labelled set's checks, entities included, and a broken entry is refused by name; what
bench/relations.py counts. No embedding, no database."""

import json
from collections import Counter

import pytest

from bench import relations
from bench.vague_data import ENTITY_KINDS, PARTS, PHRASINGS, TOP_K, load


def test_the_set_loads_with_relation_and_unrelated_questions_in_every_phrasing_of_both_parts():
    profiles = relations.load()  # every rule of bench/vague_data.load, with entities
    questions = [q for profile in profiles for q in profile["questions"]]

    assert Counter(profile["part"] for profile in profiles) == {"tune": 6, "report": 6}
    for part in PARTS:
        asked = Counter(
            q["phrasing"] for q in questions if q["part"] == part and q["kind"] == "relation"
        )
        assert set(asked) == set(PHRASINGS), (part, asked)
        unrelated = [q for q in questions if q["part"] == part and q["kind"] == "unrelated"]
        assert len(unrelated) >= 15 and any(q.get("family_word") for q in unrelated)
    assert all(1 <= len(q["relevant"]) <= TOP_K for q in questions if q["kind"] == "relation")
    memories = [memory for profile in profiles for memory in profile["memories"]]
    entities = [e for memory in memories for e in memory.get("entities", [])]
    assert {e.get("kind", "other") for e in entities} <= set(ENTITY_KINDS)
    # Some saves name a person already known by name alone, as a later save would.
    assert any(set(e) == {"name"} for e in entities)
    # The set it extends keeps loading as before, without relation questions.
    assert all(q["kind"] != "relation" for p in load() for q in p["questions"])


def write(tmp_path, *, entities=None, question=None):
    memory = {"key": "wife", "value": "Married to Sofia"}
    if entities is not None:
        memory["entities"] = entities
    profile = {
        "name": "p",
        "part": "report",
        "memories": [memory, {"key": "job", "value": "Works at Acme"}],
        "questions": [
            {
                "query": "what does my wife like?",
                "kind": "relation",
                "relevant": ["wife"],
                "unrelated": ["job"],
                "part": "report",
                "phrasing": "first_person",
                **(question or {}),
            }
        ],
    }
    path = tmp_path / "set.json"
    path.write_text(json.dumps([profile]))
    return path


def test_a_well_formed_entry_loads(tmp_path):
    entities = [{"name": "Sofia", "kind": "person", "relation": "wife"}, {"name": "Acme"}]

    [profile] = relations.load(write(tmp_path, entities=entities))

    assert profile["memories"][0]["entities"] == entities


@pytest.mark.parametrize(
    ("entities", "message"),
    [
        ([{"kind": "person", "relation": "wife"}], "p: memory 'wife': entity .* has no name"),
        ([{"name": "  "}], "p: memory 'wife': entity .* has no name"),
        ([{"name": "Sofia", "kind": "spouse"}], "entity 'Sofia' kind 'spouse'"),
        ([{"name": "Sofia", "relation": 3}], "entity 'Sofia' relation is not a string"),
        ([{"name": "Sofia", "aliases": ["Sof"]}], r"entity 'Sofia' has fields \['aliases'\]"),
        ({"name": "Sofia"}, "p: memory 'wife': entities is not a list"),
    ],
)
def test_a_broken_entity_is_refused_naming_its_memory(tmp_path, entities, message):
    with pytest.raises(ValueError, match=message):
        relations.load(write(tmp_path, entities=entities))


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (
            {"relevant": [], "unrelated": ["wife", "job"]},
            "'what does my wife like\\?': a relation question names the memories",
        ),
        ({"phrasing": "other_language"}, "lang None is not a two-letter language code"),
        ({"kind": "vague"}, "kind 'vague' is not one of"),
    ],
)
def test_a_broken_question_is_refused_naming_it(tmp_path, question, message):
    with pytest.raises(ValueError, match=message):
        relations.load(write(tmp_path, question=question))


def test_the_older_set_refuses_a_relation_question(tmp_path):
    with pytest.raises(ValueError, match="kind 'relation' is not one of"):
        load(write(tmp_path))


def test_complete_means_every_relevant_memory_or_a_hint_full_of_them():
    assert relations.covered(["a", "b"], ["b", "x", "a"]) == (True, True)
    assert relations.covered(["a", "b"], ["b", "x"]) == (False, True)
    assert relations.covered(["a"], ["x"]) == (False, False)
    seven = ["a", "b", "c", "d", "e", "f", "g"]
    assert relations.covered(seven, ["g", "f", "e", "d", "c"]) == (True, True)
    assert relations.covered(seven, ["g", "f", "x", "d", "c"]) == (False, True)


def record(kind, phrasing, hint, part="report", relevant=("a",), **extra):
    complete, some = relations.covered(list(relevant), hint)
    out = {
        "kind": kind,
        "phrasing": phrasing,
        "part": part,
        "relevant": list(relevant) if kind == "relation" else [],
        "hint": hint,
        "unrelated_in": [key for key in hint if key not in relevant],
        **extra,
    }
    if kind == "relation":
        out.update(complete=complete, any=some)
    return out


def test_figures_count_complete_hints_and_empty_ones_per_part_and_phrasing():
    records = [
        record("relation", "tool_call", ["a"]),
        record("relation", "tool_call", ["x", "b"], relevant=("a", "b")),
        record("unrelated", "tool_call", []),
        record("unrelated", "first_person", ["a"], family_word=True),
        record("relation", "search_box", ["a"], part="tune"),
    ]

    figures = relations.figures(records)

    tool = figures["report"]["tool_call"]["relation"]
    assert (tool["questions"], tool["complete"], tool["any"]) == (2, 1, 2)
    assert tool["complete_share"] == 0.5 and tool["unrelated_in_hint"] == 1
    every = figures["report"]["all"]["unrelated"]
    assert (every["questions"], every["empty"], every["empty_share"]) == (2, 1, 0.5)
    assert every["family_word"] == {"questions": 1, "empty": 0}
    assert figures["all"]["search_box"]["relation"]["complete"] == 1
    assert figures["report"]["search_box"]["relation"]["complete_share"] is None


def test_the_table_marks_what_misses_the_target_and_lists_the_report_parts_failures():
    records = [
        record("relation", "tool_call", ["a"], profile="p", query="user wife"),
        record("relation", "search_box", [], profile="p", query="spouse"),
        record("unrelated", "first_person", ["a"], profile="p", query="wife of Henry VIII?"),
    ]
    condition = {"figures": relations.figures(records), "questions": records}
    result = {
        "profiles": 1,
        "memories": 2,
        "embedder": "m",
        "conditions": {"linked": condition, "not_linked": condition},
    }

    text = relations.table({"relations": {"sqlite": result}})

    rows = {tuple(c.strip() for c in line.split("|")[1:3]): line for line in text.splitlines()}
    assert "| 100.0% (1/1) |" in rows[("report", "tool call")]
    assert "0.0% (0/1) ✗" in rows[("report", "search box")]
    assert "50.0% (1/2) ✗" in rows[("report", "every phrasing")]
    assert "'spouse': hint [], missing ['a']" in text
    assert "'wife of Henry VIII?': hint ['a']" in text
    assert "'user wife'" not in text
