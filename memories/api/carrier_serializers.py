"""Serializers of the scope carriers and conversations: personas, projects, topics, work
sessions and their messages."""

from django.conf import settings
from rest_framework import serializers

from memories.api.fields import (
    StrictInputMixin,
    StrictUUIDField,
    persona_ref,
    project_ref,
    trimmed_char,
)
from memories.api.serializers import validated_items
from memories.models import (
    Message,
    MessageRole,
    Persona,
    Project,
    Topic,
    WorkSession,
    WorkSessionMessage,
)


class PersonaSerializer(StrictInputMixin, serializers.ModelSerializer):
    tolerated_fields = ("id", "created_at")
    name = trimmed_char(200)

    class Meta:
        model = Persona
        fields = ["id", "name", "memory_enabled", "created_at"]
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


class MessageBatchSerializer(StrictInputMixin, serializers.Serializer):
    """{"messages": [{role, content}, ...]}: each item validated as one posted message, all or
    nothing; errors are keyed `messages[i].field`."""

    item_serializer = MessageSerializer

    messages = serializers.ListField(
        child=serializers.JSONField(),
        allow_empty=False,
        max_length=settings.BATCH_MAX_ITEMS,
        help_text=f"1 to {settings.BATCH_MAX_ITEMS} messages ({{role, content}}), in order.",
    )

    def validate(self, attrs):
        return validated_items(attrs, "messages", self.item_serializer, self.context)


class WorkSessionMessageBatchSerializer(MessageBatchSerializer):
    item_serializer = WorkSessionMessageSerializer


class ExtractionStartedSerializer(serializers.Serializer):
    """The extraction a batch of messages started (or found on its way), as the
    MESSAGE_POSTED_HOOKS hook reported it."""

    task_id = serializers.CharField(help_text="Follow it at GET /api/extraction-runs/{task_id}.")
    status = serializers.CharField(help_text="queued, or in process already its outcome.")


class WorkSessionSerializer(StrictInputMixin, serializers.ModelSerializer):
    project_id = project_ref()

    class Meta:
        model = WorkSession
        fields = ["id", "project_id", "created_at"]
        read_only_fields = ["id", "created_at"]
