"""Field types and input rules every API of the service shares: strict input (unknown
fields refused), and unit floats, UUIDs, booleans and past times that refuse what DRF would
coerce."""

import math
import uuid

from django.utils import timezone
from rest_framework import serializers


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


def trimmed_char(max_length: int, **kwargs) -> serializers.CharField:
    return serializers.CharField(max_length=max_length, trim_whitespace=True, **kwargs)
