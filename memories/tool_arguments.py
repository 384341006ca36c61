"""The arguments each tool of memories.tools takes: one serializer per tool, which validates a
call as the REST API validates its bodies (strict: unknown arguments refused, each a plain value
where one is expected) and from which the tool's JSON schema is made (json_schema), so the
two cannot drift apart."""

import json

from django.conf import settings
from rest_framework import serializers

from memories.api.fields import (
    AsOfField,
    FutureDateTimeField,
    metadata_or_field_error,
    min_relevance_field,
)
from memories.carriers import SCOPE_ALIASES, scope_named
from memories.filters.language import filter_parse
from memories.models import Scope
from rest.fields import (
    StrictBooleanField,
    StrictInputMixin,
    StrictUUIDField,
    UnitFloatField,
    trimmed_char,
)

RECALL_QUERY_MAX_LENGTH = 1000
# A context query may be a whole message: products pass the user's message as it is, and
# recall reads its end (memories/recall/query.py).
CONTEXT_QUERY_MAX_LENGTH = settings.MESSAGE_CONTENT_MAX_LENGTH

PLAIN_VALUE_EXPECTED = "Expected a string, number, boolean or null, not a list or object."


class JsonObjectArgument(serializers.Field):
    """An argument that is a JSON object: given as an object (REST, MCP) or as its JSON text,
    which is what strict function calling can ask of a model for an object of free keys.
    `parse` turns the object into the value the tool takes (a filter's tree, metadata)."""

    def __init__(self, *, parse, **kwargs) -> None:
        self.parse = parse
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str):
            if not data.strip():
                return self.parse(None)
            try:
                data = json.loads(data)
            except ValueError as error:
                raise serializers.ValidationError(f"Not JSON: {error.args[0]}.") from None
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected a JSON object, or its text.")
        return self.parse(data)

    def to_representation(self, value):
        return value


def _metadata(value):
    return metadata_or_field_error(value)


def _filter(value):
    # A problem is an InvalidInput naming its path (filter.and[0].metadata.app.gte).
    return filter_parse(value)


FILTER_HELP = (
    "Only memories matching this filter, as JSON text (null: all), e.g. "
    '{"category": {"in": ["food", "travel"]}, "metadata.app": "ios"}. Operators: eq, ne, in, '
    "nin, gt, gte, lt, lte, contains, exists; and, or, not; fields: category, key, scope, "
    "source, importance, confidence, created_at, updated_at, valid_from, pinned, "
    "metadata.<key>."
)


# Argument fields that take a list or an object.
STRUCTURED_FIELDS = (
    JsonObjectArgument,
    serializers.ListField,
    serializers.DictField,
    serializers.JSONField,
    serializers.BaseSerializer,
)


class ToolArguments(StrictInputMixin, serializers.Serializer):
    """A tool's arguments as a model produced them. Unknown names are refused; null for an
    optional argument means its default, since strict function calling always sends every
    argument and null where the model has nothing to say."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            # A list or object where a plain value belongs is refused before any field sees
            # it: DRF's fields would str() it (ChoiceField, IntegerField), which recurses as
            # deep as it is nested, and JSON nested nearly to the parser's limit then
            # overflows the stack (a 500).
            nested = {
                name: [PLAIN_VALUE_EXPECTED]
                for name, value in data.items()
                if isinstance(value, list | dict)
                and name in self.fields
                and not isinstance(self.fields[name], STRUCTURED_FIELDS)
            }
            if nested:
                raise serializers.ValidationError(nested)
            data = {
                name: value
                for name, value in data.items()
                if value is not None or name not in self.fields or self.fields[name].required
            }
        return super().to_internal_value(data)


def _number_range(field: serializers.Field) -> dict:
    if isinstance(field, UnitFloatField):
        # Given outside 0..1 it is clamped, not refused; the schema asks for the range.
        return {"minimum": 0, "maximum": 1}
    bounds = {
        "minimum": getattr(field, "min_value", None),
        "maximum": getattr(field, "max_value", None),
    }
    return {name: bound for name, bound in bounds.items() if bound is not None}


def _field_schema(field: serializers.Field) -> dict:
    """One argument in the JSON schema of strict function calling. An optional one also
    takes null (a model must send every argument), which means its default."""
    if isinstance(field, serializers.BooleanField):
        schema: dict = {"type": "boolean"}
    elif isinstance(field, serializers.IntegerField):
        schema = {"type": "integer", **_number_range(field)}
    elif isinstance(field, serializers.FloatField):
        schema = {"type": "number", **_number_range(field)}
    elif isinstance(field, serializers.ChoiceField):
        # Other names a client may send for a choice (SCOPE_ALIASES) are taken, not offered.
        offered = [choice for choice in field.choices if choice not in SCOPE_ALIASES]
        schema = {"type": "string", "enum": offered}
    elif isinstance(field, serializers.UUIDField):
        schema = {"type": "string", "format": "uuid"}
    elif isinstance(field, serializers.CharField | serializers.DateTimeField):
        schema = {"type": "string"}
    elif isinstance(field, JsonObjectArgument):
        # An object of free keys cannot be described in strict mode: its JSON text is asked.
        schema = {"type": "string"}
    else:
        raise TypeError(f"no JSON schema for {type(field).__name__}")
    schema["description"] = str(field.help_text)
    if not field.required:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


def json_schema(arguments: type[ToolArguments], *, strict: bool = True) -> dict:
    """The tool's parameters in strict function calling: every argument listed and required
    (null for an optional one's default), nothing else allowed. Not `strict` (MCP, whose
    clients may leave arguments out), only the arguments without a default are required."""
    fields = arguments().fields
    return {
        "type": "object",
        "properties": {name: _field_schema(field) for name, field in fields.items()},
        "required": [name for name, field in fields.items() if strict or field.required],
        "additionalProperties": False,
    }


class MemorySaveArguments(ToolArguments):
    key = trimmed_char(
        settings.MEMORY_KEY_MAX_LENGTH,
        help_text=(
            "Short label, e.g. 'preferred language'. At most "
            f"{settings.MEMORY_KEY_MAX_LENGTH} characters."
        ),
    )
    value = trimmed_char(
        settings.MEMORY_VALUE_MAX_LENGTH,
        help_text=(
            "The fact itself, e.g. 'Go with Gin for backend services'. At most "
            f"{settings.MEMORY_VALUE_MAX_LENGTH} characters."
        ),
    )
    # The defaults are POST /api/memories' (MemoryCreateSerializer): a save is a create.
    confidence = UnitFloatField(
        default=1.0, help_text="How sure you are that the fact is true and lasting; null for 1.0."
    )
    category = trimmed_char(
        settings.MEMORY_CATEGORY_MAX_LENGTH,
        allow_blank=True,
        default="",
        help_text=(
            "A label such as 'preference' or 'personal' (at most "
            f"{settings.MEMORY_CATEGORY_MAX_LENGTH} characters); null for none."
        ),
    )
    importance = UnitFloatField(
        default=0.5, help_text="How much the fact matters for future answers; null for 0.5."
    )
    scope = serializers.ChoiceField(
        choices=[Scope.USER, Scope.PROJECT, Scope.PERSONA_USER, *SCOPE_ALIASES],
        default="user",
        help_text=(
            "user: about the user everywhere (null means user); project: only within the "
            "current project; persona_user: only with the current persona."
        ),
    )
    replace = StrictBooleanField(
        default=True,
        help_text=(
            "false keeps the key's current value beside this one, for a key that holds "
            "several facts (e.g. 'allergy'); null means true: replace it."
        ),
    )
    pinned = StrictBooleanField(
        default=False,
        help_text=(
            "true for a standing fact every turn needs whatever is asked (e.g. how the user "
            "wants to be answered); null means false."
        ),
    )
    metadata = JsonObjectArgument(
        parse=_metadata,
        required=False,
        help_text=(
            "The product's own keys as JSON object text, e.g. {\"app\": \"ios\"}; null for "
            "none."
        ),
    )
    expires_at = FutureDateTimeField(
        required=False,
        help_text=(
            "When the fact stops being true, for a passing one ('in Lisbon this week'): a "
            "future ISO 8601 date and time, e.g. '2026-05-31T23:59:59Z'; null for a lasting "
            "fact."
        ),
    )

    def validate_scope(self, value):
        return scope_named(value)


class MemoryRecallArguments(ToolArguments):
    query = serializers.CharField(
        max_length=RECALL_QUERY_MAX_LENGTH,
        help_text=(
            f"What to look for, in natural language. At most {RECALL_QUERY_MAX_LENGTH} characters."
        ),
    )
    top_k = serializers.IntegerField(
        min_value=1,
        max_value=50,
        default=settings.RECALL_HINT_TOP_K,
        help_text=f"How many memories to return; null for {settings.RECALL_HINT_TOP_K}.",
    )
    as_of = AsOfField(
        required=False,
        help_text=(
            "A past date (YYYY-MM-DD) to recall what was true then, including facts that "
            "changed since; null for what is true now."
        ),
    )
    min_relevance = min_relevance_field(
        "0 to 1: the least relevance a memory needs to be returned; 0 returns the top_k best "
        "whatever their relevance. null: only memories that bear on the query."
    )
    filter = JsonObjectArgument(parse=_filter, required=False, help_text=FILTER_HELP)


class MemoryContextArguments(ToolArguments):
    query = serializers.CharField(
        max_length=CONTEXT_QUERY_MAX_LENGTH,
        help_text=(
            f"The user's message as it is, or the topic at hand. At most "
            f"{CONTEXT_QUERY_MAX_LENGTH} characters; recall reads the last "
            f"{settings.RECALL_QUERY_READ_CHARS}."
        ),
    )
    top_k = serializers.IntegerField(
        min_value=1,
        max_value=20,
        default=settings.RECALL_HINT_TOP_K,
        help_text=f"At most this many memories; null for {settings.RECALL_HINT_TOP_K}.",
    )
    profile = StrictBooleanField(
        default=False,
        help_text=(
            "true puts the short summary of who the user is at the head of the hint (at the "
            "start of a conversation); null means false."
        ),
    )
    filter = JsonObjectArgument(parse=_filter, required=False, help_text=FILTER_HELP)


class MemoryProfileArguments(ToolArguments):
    """memory_profile takes no arguments."""


class MemoryForgetArguments(ToolArguments):
    memory_id = StrictUUIDField(help_text="The id of the memory to forget.")
