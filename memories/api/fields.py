"""The API's field types and input rules shared by its serializers: strict input (unknown
fields refused), unit floats, UUIDs, booleans and times that refuse what DRF would coerce, the
scope field and the references to the caller's own carriers."""

import datetime
import math
import uuid

from django.utils import timezone
from rest_framework import serializers

from memories.carriers import OWNED_CARRIERS, SCOPE_INPUT_CHOICES, scope_named
from memories.models import (
    Memory,
    Persona,
    Project,
    Topic,
    WorkSession,
)
from memories.selectors import personas_of


class StrictInputMixin:
    """Refuse fields the endpoint does not know, so a typo ("improtance") is not silently
    dropped. Fields of the output shape (`tolerated_fields`) may be sent back unchanged."""

    tolerated_fields: tuple[str, ...] = ()

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": ["Expected a JSON object."]}, code="invalid"
            )
        known = {name for name, field in self.fields.items() if not field.read_only}
        unknown = sorted(set(data) - known - set(self.tolerated_fields))
        if unknown:
            raise serializers.ValidationError(
                {name: ["Unknown field."] for name in unknown}, code="invalid"
            )
        return super().to_internal_value(data)


class UnitFloatField(serializers.FloatField):
    """A finite number (not a boolean); the service clamps it into 0..1."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            self.fail("invalid")
        return value


class StrictUUIDField(serializers.UUIDField):
    """A UUID given as a string. DRF's UUIDField also takes 42 or true as UUID(int=...)."""

    def to_internal_value(self, data):
        if not isinstance(data, str | uuid.UUID):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false. DRF's BooleanField also takes "yes", 1 or "off"."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.")
        return data


class PastDateTimeField(serializers.DateTimeField):
    """A time that has happened: a future one would rank a memory above any real recency."""

    def to_internal_value(self, value):
        moment = super().to_internal_value(value)
        if moment > timezone.now():
            raise serializers.ValidationError("Must not be in the future.")
        return moment


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


def trimmed_char(max_length: int, **kwargs) -> serializers.CharField:
    return serializers.CharField(max_length=max_length, trim_whitespace=True, **kwargs)


def external_user_id(memory: Memory, request) -> str | None:
    """The product's id for the user a memory is about. Recall reads memories without their
    user, and almost all of them are the caller's: the caller's own id needs no query."""
    if memory.user_id is None:
        return None
    user = getattr(request, "user", None)
    if user is not None and user.id == memory.user_id:
        return user.external_id
    owner = memory.user  # not None: memory.user_id is set
    return owner.external_id if owner is not None else None
