"""extraction/parsing.py: finding the JSON in a model's answer and validating the contract
{"memories": [{"key", "value", "category", "importance", "confidence", "scope"}]}."""

import json

import pytest

from extraction.parsing import Candidate, MalformedOutput, find_json_object, parse_candidates

PAYLOAD = {"memories": [{"key": "city", "value": "Lives in Lisbon"}]}
TEXT = json.dumps(PAYLOAD)


# --- find_json_object ---------------------------------------------------------------------------


def test_it_reads_a_bare_json_object():
    assert find_json_object(TEXT) == PAYLOAD


def test_it_reads_json_inside_prose():
    assert find_json_object(f"Here you go: {TEXT} Hope that helps {{-:") == PAYLOAD


def test_it_reads_json_inside_a_code_fence():
    assert find_json_object(f"```json\n{TEXT}\n```") == PAYLOAD


def test_it_reads_json_inside_a_bare_code_fence():
    assert find_json_object(f"Answer:\n```\n{TEXT}\n```\n") == PAYLOAD


def test_it_ignores_json_inside_a_think_block():
    text = '<think>Maybe {"memories": [{"key": "wrong", "value": "x"}]}?</think>\n' + TEXT

    assert find_json_object(text) == PAYLOAD


@pytest.mark.parametrize("tag", ["think", "thinking", "reasoning", "THINK"])
def test_it_ignores_reasoning_blocks_with_any_usual_tag(tag):
    text = f"<{tag}>\n{{'broken': json\n{{\"memories\": []}}\n</{tag}>\n{TEXT}"

    assert find_json_object(text) == PAYLOAD


def test_it_prefers_the_object_with_memories_over_an_earlier_one():
    text = '{"note": "draft"} and then the real answer: ' + TEXT

    assert find_json_object(text) == PAYLOAD


def test_it_falls_back_to_the_first_object_without_memories():
    assert find_json_object('x {"facts": []} y {"other": 1}') == {"facts": []}


def test_it_skips_braces_that_start_no_json():
    assert find_json_object("{not json} {also not} " + TEXT) == PAYLOAD


@pytest.mark.parametrize("text", ["", "   \n", "no json here", "[1, 2, 3]", '{"memories": ['])
def test_it_raises_malformed_output_when_there_is_no_object(text):
    with pytest.raises(MalformedOutput):
        find_json_object(text)


def test_it_raises_malformed_output_for_a_non_string():
    with pytest.raises(MalformedOutput):
        find_json_object(None)


# --- parse_candidates ---------------------------------------------------------------------------


def test_it_parses_every_field():
    payload = {
        "memories": [
            {
                "key": " city ",
                "value": " Lives in Lisbon ",
                "category": "personal",
                "importance": 0.7,
                "confidence": 0.9,
                "scope": "project",
            }
        ]
    }

    assert parse_candidates(payload) == [
        Candidate(
            key="city",
            value="Lives in Lisbon",
            category="personal",
            importance=0.7,
            confidence=0.9,
            scope="project",
        )
    ]


def test_missing_optional_fields_get_defaults():
    [candidate] = parse_candidates({"memories": [{"key": "city", "value": "Lives in Lisbon"}]})

    assert candidate.scope == "user"
    assert candidate.category == ""
    assert 0.0 <= candidate.importance <= 1.0
    assert 0.0 <= candidate.confidence <= 1.0


def test_a_null_category_is_empty():
    [candidate] = parse_candidates({"memories": [{"key": "k", "value": "v", "category": None}]})

    assert candidate.category == ""


def test_importance_and_confidence_are_clamped_into_0_1():
    [high, low] = parse_candidates(
        {
            "memories": [
                {"key": "a", "value": "A", "importance": 7, "confidence": 1.5},
                {"key": "b", "value": "B", "importance": -2, "confidence": -0.1},
            ]
        }
    )

    assert (high.importance, high.confidence) == (1.0, 1.0)
    assert (low.importance, low.confidence) == (0.0, 0.0)


@pytest.mark.parametrize("scope", ["user", "persona_user", "project", "session"])
def test_it_accepts_the_contract_scopes(scope):
    [candidate] = parse_candidates({"memories": [{"key": "k", "value": "v", "scope": scope}]})

    assert candidate.scope == scope


def test_long_texts_are_cut_to_the_field_limits(settings):
    [candidate] = parse_candidates(
        {"memories": [{"key": "k" * 1000, "value": "v" * 100_000, "category": "c" * 1000}]}
    )

    assert len(candidate.key) == settings.MEMORY_KEY_MAX_LENGTH
    assert len(candidate.value) == settings.MEMORY_VALUE_MAX_LENGTH
    assert len(candidate.category) == settings.MEMORY_CATEGORY_MAX_LENGTH


def test_an_empty_list_is_no_candidates():
    assert parse_candidates({"memories": []}) == []


BAD_PAYLOADS = {
    "no memories key": {"facts": []},
    "memories not a list": {"memories": "Lives in Lisbon"},
    "memories null": {"memories": None},
    "an item not an object": {"memories": ["Lives in Lisbon"]},
    "no key": {"memories": [{"value": "Lives in Lisbon"}]},
    "no value": {"memories": [{"key": "city"}]},
    "blank value": {"memories": [{"key": "city", "value": "   "}]},
    "value not a string": {"memories": [{"key": "city", "value": 42}]},
    "category not a string": {"memories": [{"key": "k", "value": "v", "category": ["a"]}]},
    "importance a string": {"memories": [{"key": "k", "value": "v", "importance": "high"}]},
    "importance a bool": {"memories": [{"key": "k", "value": "v", "importance": True}]},
    "confidence NaN": {"memories": [{"key": "k", "value": "v", "confidence": float("nan")}]},
    "confidence infinite": {"memories": [{"key": "k", "value": "v", "confidence": float("inf")}]},
    "unknown scope": {"memories": [{"key": "k", "value": "v", "scope": "galaxy"}]},
    "persona scope": {"memories": [{"key": "k", "value": "v", "scope": "persona"}]},
    "not an object": ["memories"],
}


@pytest.mark.parametrize("payload", BAD_PAYLOADS.values(), ids=BAD_PAYLOADS.keys())
def test_it_raises_malformed_output_for(payload):
    with pytest.raises(MalformedOutput):
        parse_candidates(payload)


def test_one_bad_item_rejects_the_whole_answer():
    payload = {"memories": [{"key": "city", "value": "Lives in Lisbon"}, {"key": "broken"}]}

    with pytest.raises(MalformedOutput):
        parse_candidates(payload)


# --- evidence ----------------------------------------------------------------------------------


def evidence_of(evidence, message_count=None):
    item = {"key": "city", "value": "Lives in Lisbon", "evidence": evidence}
    [candidate] = parse_candidates({"memories": [item]}, message_count=message_count)
    return candidate.evidence, candidate.evidence_dropped


def test_evidence_is_optional():
    [candidate] = parse_candidates({"memories": [{"key": "k", "value": "v"}]}, message_count=3)

    assert (candidate.evidence, candidate.evidence_dropped) == ((), ())


def test_evidence_keeps_each_valid_message_number_once_in_order():
    assert evidence_of([3, 1, 3], message_count=3) == ((1, 3), ())
    assert evidence_of(2, message_count=3) == ((2,), ())


def test_evidence_outside_the_messages_sent_is_dropped_not_retried():
    assert evidence_of([0, 2, 4, -1], message_count=3) == ((2,), ("0", "4", "-1"))
    assert evidence_of(["1", 1.5, False, {"n": 1}], message_count=3) == (
        (),
        ("'1'", "1.5", "False", "{'n': 1}"),
    )
