"""A tool's JSON schema is made from the serializer that validates its calls: what a model is
told it may send and what a call is checked against are one contract."""

import pytest
from rest_framework import serializers

from memories.carriers import SCOPE_ALIASES
from memories.tool_arguments import ToolArguments, json_schema
from memories.tools import TOOLS


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_argument_the_serializer_takes_is_in_the_schema_and_no_other(name):
    tool = TOOLS[name]
    fields = tool.arguments().fields
    parameters = tool.openai_format()["function"]["parameters"]
    assert list(parameters["properties"]) == list(fields)
    assert parameters["required"] == list(fields)
    assert parameters["additionalProperties"] is False
    for argument, field in fields.items():
        schema = parameters["properties"][argument]
        assert schema["description"] == str(field.help_text), argument
        assert schema["description"], f"{name}.{argument} has no description"
        assert ("null" in schema["type"]) == (not field.required), argument
        if isinstance(field, serializers.ChoiceField):
            offered = [c for c in field.choices if c not in SCOPE_ALIASES]
            expected = offered if field.required else [*offered, None]
            assert schema["enum"] == expected, argument
        if isinstance(field, serializers.IntegerField):
            assert (schema["minimum"], schema["maximum"]) == (field.min_value, field.max_value)


def test_a_new_argument_appears_in_the_schema_with_its_bounds_and_null_for_its_default():
    class Arguments(ToolArguments):
        query = serializers.CharField(help_text="What to find.")
        limit = serializers.IntegerField(min_value=2, max_value=9, default=3, help_text="How many.")
        kind = serializers.ChoiceField(choices=["a", "b"], default="a", help_text="Which.")

    assert json_schema(Arguments) == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to find."},
            "limit": {
                "type": ["integer", "null"],
                "minimum": 2,
                "maximum": 9,
                "description": "How many.",
            },
            "kind": {"type": ["string", "null"], "enum": ["a", "b", None], "description": "Which."},
        },
        "required": ["query", "limit", "kind"],
        "additionalProperties": False,
    }


def test_outside_strict_mode_only_the_arguments_without_a_default_are_required():
    class Arguments(ToolArguments):
        query = serializers.CharField(help_text="What to find.")
        limit = serializers.IntegerField(default=3, help_text="How many.")

    schema = json_schema(Arguments, strict=False)

    assert schema["required"] == ["query"]
    assert schema["properties"] == json_schema(Arguments)["properties"]


def test_an_argument_type_the_schema_cannot_state_is_an_error_not_a_guess():
    class Arguments(ToolArguments):
        tags = serializers.ListField(child=serializers.CharField(), help_text="Tags.")

    with pytest.raises(TypeError, match="ListField"):
        json_schema(Arguments)


def test_an_alias_is_taken_by_the_serializer_but_not_offered_to_the_model():
    scope = TOOLS["memory_save"].openai_format()["function"]["parameters"]["properties"]["scope"]
    assert "global" not in scope["enum"]
    validator = TOOLS["memory_save"].arguments(
        data={"key": "k", "value": "v", "confidence": 1, "scope": "global"}
    )
    assert validator.is_valid(), validator.errors
    assert validator.validated_data["scope"] == "user"
