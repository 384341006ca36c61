"""Serializers of the scope carriers and conversations: personas, projects, topics, work
sessions and their messages."""

from django.conf import settings
from django.core.validators import slug_re
from django.utils.module_loading import import_string
from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from memories.api.fields import persona_ref, project_ref
from memories.api.serializers import batch_item_field, validated_items
from memories.models import (
    Message,
    MessageRole,
    Persona,
    Project,
    Tenant,
    Topic,
    WorkSession,
    WorkSessionMessage,
)
from rest.fields import StrictInputMixin, StrictUUIDField, trimmed_char


class CallerTenantField(serializers.SlugRelatedField):
    """A tenant's slug: any tenant for a local login, only its own for a key (another
    tenant's slug is "does not exist", as an unknown one)."""

    def get_queryset(self):
        user = self.context["request"].user
        tenants = Tenant.objects.all()
        return tenants if user.tenant_id is None else tenants.filter(id=user.tenant_id)

    def to_internal_value(self, data):
        # No slug holds a NUL or other non-slug text, and PostgreSQL refuses a NUL in a query
        # (a 500): such text is an unknown slug without asking the database.
        if not isinstance(data, str) or not slug_re.fullmatch(data):
            self.fail("does_not_exist", slug_name=self.slug_field, value=str(data)[:100])
        return super().to_internal_value(data)


class PersonaSerializer(StrictInputMixin, serializers.ModelSerializer):
    tolerated_fields = ("id", "created_at")
    name = trimmed_char(200)
    tenant = CallerTenantField(
        slug_field="slug",
        required=False,
        help_text=(
            "The slug of the tenant the persona belongs to; only its users and keys see it. "
            "A key's persona is its own tenant's; a local staff login names one when the "
            "installation has several. Fixed once created."
        ),
    )

    class Meta:
        model = Persona
        fields = ["id", "name", "memory_enabled", "tenant", "created_at"]
        read_only_fields = ["id", "created_at"]


class ProjectSerializer(StrictInputMixin, serializers.ModelSerializer):
    name = trimmed_char(200)

    class Meta:
        model = Project
        fields = ["id", "name", "created_at"]
        read_only_fields = ["id", "created_at"]


class TopicSerializer(StrictInputMixin, serializers.ModelSerializer):
    title = trimmed_char(200, allow_blank=True, required=False, default="")
    persona_id = persona_ref()
    project_id = project_ref()
    channel_id = StrictUUIDField(required=False, allow_null=True)

    class Meta:
        model = Topic
        fields = ["id", "title", "persona_id", "project_id", "channel_id", "created_at"]
        read_only_fields = ["id", "created_at"]


class MessageSerializer(StrictInputMixin, serializers.ModelSerializer):
    role = serializers.ChoiceField(choices=MessageRole.choices)
    content = serializers.CharField(
        max_length=settings.MESSAGE_CONTENT_MAX_LENGTH, trim_whitespace=False
    )

    class Meta:
        model: type[Message] | type[WorkSessionMessage] = Message
        fields = ["id", "role", "content", "created_at"]
        read_only_fields = ["id", "created_at"]

    def validate_content(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return value


class WorkSessionMessageSerializer(MessageSerializer):
    class Meta(MessageSerializer.Meta):
        model = WorkSessionMessage


def messages_field(item_serializer) -> serializers.ListField:
    return serializers.ListField(
        child=batch_item_field(item_serializer),
        allow_empty=False,
        max_length=settings.BATCH_MAX_ITEMS,
        help_text=f"1 to {settings.BATCH_MAX_ITEMS} messages ({{role, content}}), in order.",
    )


class MessageBatchSerializer(StrictInputMixin, serializers.Serializer):
    """{"messages": [{role, content}, ...]}: each item validated as one posted message, all or
    nothing; errors are keyed `messages[i].field`."""

    item_serializer = MessageSerializer

    messages = messages_field(MessageSerializer)

    def validate(self, attrs):
        return validated_items(attrs, "messages", self.item_serializer, self.context)


class WorkSessionMessageBatchSerializer(MessageBatchSerializer):
    item_serializer = WorkSessionMessageSerializer

    messages = messages_field(WorkSessionMessageSerializer)


class ExtractionNotTriggeredSerializer(serializers.Serializer):
    """A messages post that started no extraction, and why."""

    status = serializers.ChoiceField(choices=["not_triggered"])
    reason = serializers.CharField(help_text="Why nothing was triggered.")


def _extraction_variants() -> list:
    # The run is extraction's serializer (what MESSAGE_POSTED_HOOKS' hook answers), named by
    # path and read only when the schema is drawn: the memories app does not import
    # extraction.
    return [
        ExtractionNotTriggeredSerializer,
        import_string("extraction.representations.ExtractionRunSerializer"),
    ]


def extraction_report_field() -> PolymorphicProxySerializer:
    """A messages post's `extraction`: the run it started (or found on its way), as
    GET /api/extraction-runs/{task_id} shows it, or not_triggered with the reason."""
    return PolymorphicProxySerializer(
        component_name="MessagesExtraction",
        serializers=_extraction_variants,
        resource_type_field_name=None,
    )


def message_posted_serializer(message_serializer: type[MessageSerializer]) -> type:
    """One posted message as answered: the message's fields and the post's `extraction`."""

    fields = [*message_serializer.Meta.fields, "extraction"]
    meta = type("Meta", (message_serializer.Meta,), {"fields": fields, "read_only_fields": fields})
    name = message_serializer.__name__.removesuffix("Serializer")
    return type(
        f"{name}PostedOneSerializer",
        (message_serializer,),
        {"Meta": meta, "extraction": extraction_report_field()},
    )


class WorkSessionSerializer(StrictInputMixin, serializers.ModelSerializer):
    project_id = project_ref()

    class Meta:
        model = WorkSession
        fields = ["id", "project_id", "created_at"]
        read_only_fields = ["id", "created_at"]
