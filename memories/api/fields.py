"""The memories API's own field types: the time to recall as of, min_relevance, the scope
field and the references to the caller's own carriers (the fields every API shares:
rest.fields)."""

import datetime

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.carriers import OWNED_CARRIERS, SCOPE_INPUT_CHOICES, scope_named
from memories.errors import InvalidInput
from memories.filters.language import filter_parse
from memories.filters.metadata import metadata_clean
from memories.models import (
    Persona,
    Project,
    Topic,
    WorkSession,
)
from memories.retention.expiry import EXPIRY_PASSED
from memories.selectors import personas_of
from rest.fields import StrictUUIDField


class AsOfField(serializers.DateTimeField):
    """A day (YYYY-MM-DD: its end, UTC) or a moment (ISO 8601) to recall as of."""

    default_error_messages = {
        "invalid": "Expected a date (YYYY-MM-DD) or an ISO 8601 date and time "
        "(YYYY-MM-DDThh:mm[:ss][+HH:MM|Z])."
    }

    def to_internal_value(self, value):
        if isinstance(value, str) and len(value) == 10:
            try:
                day = datetime.date.fromisoformat(value)
            except ValueError:
                self.fail("invalid")
            return datetime.datetime.combine(day, datetime.time.max, tzinfo=datetime.UTC)
        return super().to_internal_value(value)


class FutureDateTimeField(serializers.DateTimeField):
    """A time still to come: a memory's expires_at (a passed one would expire the memory as
    it is written)."""

    def to_internal_value(self, value):
        moment = super().to_internal_value(value)
        if moment <= timezone.now():
            raise serializers.ValidationError(EXPIRY_PASSED)
        return moment


def min_relevance_field(help_text: str) -> serializers.FloatField:
    """The threshold that replaces the relevance gate of search and memory_recall: 0 to 1,
    refused (not clamped) outside."""
    return serializers.FloatField(min_value=0.0, max_value=1.0, required=False, help_text=help_text)


def as_of_field() -> AsOfField:
    return AsOfField(
        required=False,
        help_text=(
            "Recall what was current then: a date (YYYY-MM-DD, as of its end, UTC) or an ISO "
            "8601 date and time. Memories superseded since are included, later ones left out."
        ),
    )


class ScopeField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=SCOPE_INPUT_CHOICES, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        return scope_named(value)


class OwnedRelatedField(serializers.PrimaryKeyRelatedField):
    """A UUID naming a row the requesting user owns; others' rows are "does not exist"."""

    def __init__(self, *, owner_field: str, **kwargs):
        self.owner_field = owner_field
        kwargs.setdefault("pk_field", StrictUUIDField())
        super().__init__(**kwargs)

    def get_queryset(self):
        return super().get_queryset().filter(**{self.owner_field: self.context["request"].user})


def project_ref() -> OwnedRelatedField:
    """Optional `project_id`: one of the caller's own managed projects."""
    return OwnedRelatedField(
        owner_field=OWNED_CARRIERS["project"][1],
        queryset=Project.objects.all(),
        source="project",
        required=False,
        allow_null=True,
    )


def topic_ref() -> OwnedRelatedField:
    """Optional `topic_id`: one of the caller's own topics."""
    return OwnedRelatedField(
        owner_field=OWNED_CARRIERS["topic"][1],
        queryset=Topic.objects.all(),
        source="topic",
        required=False,
        allow_null=True,
    )


def work_session_ref() -> OwnedRelatedField:
    """Optional `work_session_id`: one of the caller's own work sessions."""
    return OwnedRelatedField(
        owner_field="user",
        queryset=WorkSession.objects.all(),
        source="work_session",
        required=False,
        allow_null=True,
    )


class ReachedPersonaField(serializers.PrimaryKeyRelatedField):
    """A UUID naming a persona the requesting user reaches (their tenant's); another
    tenant's persona is "does not exist", as an unknown id is."""

    def get_queryset(self):
        return personas_of(self.context["request"].user)


def persona_ref() -> ReachedPersonaField:
    """Optional `persona_id`: any persona of the caller's tenant (every user may talk to
    their tenant's personas)."""
    return ReachedPersonaField(
        queryset=Persona.objects.all(),
        pk_field=StrictUUIDField(),
        source="persona",
        required=False,
        allow_null=True,
    )


METADATA_SCHEMA = {"type": "object", "additionalProperties": True}


@extend_schema_field(METADATA_SCHEMA)
class MetadataField(serializers.JSONField):
    """A memory's metadata: a JSON object of the product's own keys, checked as
    memories.filters.metadata says (a problem is named with its path)."""

    def to_internal_value(self, data):
        return metadata_or_field_error(data, name=self.field_name)


def metadata_or_field_error(data, *, name: str = "metadata") -> dict:
    """metadata_clean, a problem raised as a field error named by its path below the field
    ("metadata.ticket.id", and in a batch "memories.2.metadata.ticket.id")."""
    try:
        return metadata_clean(data, field=name)
    except InvalidInput as error:
        below = (error.field or name).removeprefix(name).removeprefix(".")
        raise serializers.ValidationError(
            {below: [error.detail]} if below else [error.detail]
        ) from None


@extend_schema_field({"type": "object", "additionalProperties": True})
class FilterField(serializers.Field):
    """A filter (memories.filters.language): a JSON object, or its text in a query string.
    A problem answers 400 naming its path ("filter.and[1].metadata.app.gte")."""

    def to_internal_value(self, data):
        return filter_parse(data, name=self.field_name)

    def to_representation(self, value):
        return value


@extend_schema_field(OpenApiTypes.STR)
class FilterTextField(FilterField):
    """FilterField in a query string: the filter object's JSON text."""
