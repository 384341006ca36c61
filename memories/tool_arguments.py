"""The arguments each tool of memories.tools takes, validated as the REST API validates its
bodies: strict (unknown arguments refused), each a plain value where one is expected."""


from django.conf import settings
from rest_framework import serializers

from memories.api.fields import (
    AsOfField,
    StrictBooleanField,
    StrictInputMixin,
    StrictUUIDField,
    UnitFloatField,
    trimmed_char,
)
from memories.carriers import SCOPE_ALIASES, scope_named
from memories.models import (
    Scope,
)

# How a call names the carrier a memory_save scope needs.

RECALL_QUERY_MAX_LENGTH = 1000
# A context query may be a whole message: products pass the user's message as it is, and
# recall reads its end (memories/recall/query.py).
CONTEXT_QUERY_MAX_LENGTH = settings.MESSAGE_CONTENT_MAX_LENGTH

PLAIN_VALUE_EXPECTED = "Expected a string, number, boolean or null, not a list or object."
# Argument fields that take a list or an object.
STRUCTURED_FIELDS = (
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


class MemorySaveArguments(ToolArguments):
    key = trimmed_char(settings.MEMORY_KEY_MAX_LENGTH)
    value = trimmed_char(settings.MEMORY_VALUE_MAX_LENGTH)
    confidence = UnitFloatField()
    category = trimmed_char(settings.MEMORY_CATEGORY_MAX_LENGTH, allow_blank=True, default="")
    importance = UnitFloatField(default=0.5)
    scope = serializers.ChoiceField(
        choices=[Scope.USER, Scope.PROJECT, Scope.PERSONA_USER, *SCOPE_ALIASES], default="user"
    )
    replace = StrictBooleanField(default=True)

    def validate_scope(self, value):
        return scope_named(value)


class MemoryRecallArguments(ToolArguments):
    query = serializers.CharField(max_length=RECALL_QUERY_MAX_LENGTH)
    top_k = serializers.IntegerField(min_value=1, max_value=50, default=settings.RECALL_HINT_TOP_K)
    as_of = AsOfField(required=False)


class MemoryContextArguments(ToolArguments):
    query = serializers.CharField(max_length=CONTEXT_QUERY_MAX_LENGTH)
    top_k = serializers.IntegerField(min_value=1, max_value=20, default=settings.RECALL_HINT_TOP_K)


class MemoryForgetArguments(ToolArguments):
    memory_id = StrictUUIDField()
