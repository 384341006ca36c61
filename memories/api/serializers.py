"""Input validation and output shapes. No writes here: views call services."""

import datetime
import math
import uuid
from functools import cached_property

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from memories.carriers import SCOPE_INPUT_CHOICES, carrier_errors, scope_named
from memories.models import (
    Memory,
    MemoryRevision,
    Message,
    MessageRole,
    Persona,
    Project,
    Scope,
    Topic,
    WorkSession,
    WorkSessionMessage,
)


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
        owner_field="owner",
        queryset=Project.objects.all(),
        source="project",
        required=False,
        allow_null=True,
    )


def topic_ref() -> OwnedRelatedField:
    """Optional `topic_id`: one of the caller's own topics."""
    return OwnedRelatedField(
        owner_field="user",
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


def persona_ref() -> serializers.PrimaryKeyRelatedField:
    """Optional `persona_id`: any persona (every user may talk to any persona)."""
    return serializers.PrimaryKeyRelatedField(
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


class MemorySerializer(serializers.ModelSerializer):
    owner_id = serializers.UUIDField(read_only=True, allow_null=True)
    user_id = serializers.UUIDField(source="persona_user_id", read_only=True, allow_null=True)
    external_user_id = serializers.SerializerMethodField()
    source_topic_id = serializers.UUIDField(
        read_only=True, allow_null=True, help_text="The conversation it was extracted from."
    )
    source_work_session_id = serializers.UUIDField(
        read_only=True, allow_null=True, help_text="The work session it was extracted from."
    )
    source_message_ids = serializers.ListField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="Ids of the source's messages that say it (empty when none was cited).",
    )

    class Meta:
        model = Memory
        fields = [
            "id",
            "scope",
            "owner_id",
            "user_id",
            "external_user_id",
            "persona_id",
            "project_id",
            "topic_id",
            "key",
            "value",
            "category",
            "source",
            "source_channel_id",
            "source_topic_id",
            "source_work_session_id",
            "source_message_ids",
            "importance",
            "confidence",
            "status",
            "supersedes_id",
            "superseded_by_id",
            "valid_from",
            "valid_until",
            "access_count",
            "last_accessed_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_external_user_id(self, memory: Memory) -> str | None:
        return external_user_id(memory, self.context.get("request"))


class MemoryCreateSerializer(StrictInputMixin, serializers.Serializer):
    scope = ScopeField(default=Scope.USER)
    key = trimmed_char(settings.MEMORY_KEY_MAX_LENGTH)
    value = trimmed_char(settings.MEMORY_VALUE_MAX_LENGTH)
    category = trimmed_char(settings.MEMORY_CATEGORY_MAX_LENGTH, allow_blank=True, default="")
    importance = UnitFloatField(default=0.5)
    confidence = UnitFloatField(default=1.0)
    project_id = project_ref()
    persona_id = persona_ref()
    topic_id = StrictUUIDField(required=False, allow_null=True)
    source_channel_id = StrictUUIDField(required=False, allow_null=True)
    valid_from = PastDateTimeField(
        required=False,
        allow_null=True,
        help_text="Since when the fact holds (ISO 8601, not in the future); now when left out.",
    )
    replace = StrictBooleanField(
        default=True,
        help_text=(
            "A key names one fact: saving the key of a current memory with another value "
            "replaces it (the old one is archived, listed in superseded_ids). false keeps "
            "both, for a key that deliberately holds several facts."
        ),
    )

    def validate(self, attrs):
        scope = attrs["scope"]
        if scope == Scope.SESSION:
            raise serializers.ValidationError(
                {"scope": ["Session memories come only from extraction; use user or project."]}
            )
        if attrs.get("topic_id"):
            raise serializers.ValidationError(
                {"topic_id": ["Only session memories carry a topic_id."]}
            )
        # The user is the caller; the project and persona come from the body.
        given = ["user", *(carrier for carrier in ("project", "persona") if attrs.get(carrier))]
        errors = carrier_errors(scope, given=given, checked=("project", "persona"))
        if errors:  # the first, as before
            field, message = next(iter(errors.items()))
            raise serializers.ValidationError({field: [message]})
        attrs.pop("topic_id", None)
        return attrs


def validated_items(attrs: dict, name: str, item_serializer, context: dict) -> dict:
    """A batch body's items, each validated by `item_serializer`, all or nothing. Item errors
    are raised from validate() rather than validate_<name>, so that their keys stay
    `name[i].field` instead of nesting under `name`."""
    items, errors = [], {}
    for index, item in enumerate(attrs[name]):
        serializer = item_serializer(data=item, context=context)
        if serializer.is_valid():
            items.append(serializer.validated_data)
            continue
        for field, messages in serializer.errors.items():
            key = f"{name}[{index}]" if field == "non_field_errors" else f"{name}[{index}].{field}"
            errors[key] = [str(message) for message in messages]
    if errors:
        raise serializers.ValidationError(errors)
    return {name: items}


class MemoryBatchCreateSerializer(StrictInputMixin, serializers.Serializer):
    """{"memories": [<create body>, ...]}: each item validated as POST /api/memories, all
    or nothing; errors are keyed `memories[i].field`."""

    memories = serializers.ListField(
        child=serializers.JSONField(),
        min_length=1,
        max_length=settings.BATCH_MAX_ITEMS,
        help_text=f"1 to {settings.BATCH_MAX_ITEMS} bodies of POST /api/memories.",
    )

    def validate(self, attrs):
        return validated_items(attrs, "memories", MemoryCreateSerializer, self.context)


# The read-only fields of a memory that say what it belongs to: an edit cannot move it.
MEMORY_CARRIER_FIELDS = (
    "scope",
    "owner_id",
    "user_id",
    "external_user_id",
    "persona_id",
    "project_id",
    "topic_id",
)


def read_only_help(name: str, memory: Memory) -> str:
    """How to make the change an edit of `name` cannot make."""
    if name == "status":
        return (
            "Read-only: approve or reject a pending memory with POST "
            f"/api/memories/{memory.id}/approve or /reject, or delete it with DELETE "
            f"/api/memories/{memory.id}."
        )
    if name in MEMORY_CARRIER_FIELDS:
        return (
            "Read-only: a memory's scope and the user, persona, project or topic it belongs to "
            "are fixed. Create a new memory (POST /api/memories) and delete this one instead."
        )
    return (
        "Read-only: kept by the service. Leave it out, or send it back as "
        f"GET /api/memories/{memory.id} gives it."
    )


def same_json(sent, stored) -> bool:
    # JSON's true is not 1, though Python's True == 1.
    return sent == stored and isinstance(sent, bool) == isinstance(stored, bool)


class MemoryUpdateSerializer(StrictInputMixin, serializers.Serializer):
    """An edit of the memory in context["memory"]. The output shape may be sent back (a PUT
    of the GET body): a read-only field equal to the memory's as the API renders it is
    ignored, a different one refused, saying how to make that change."""

    tolerated_fields = tuple(MemorySerializer.Meta.fields)

    key = trimmed_char(settings.MEMORY_KEY_MAX_LENGTH, required=False)
    value = trimmed_char(settings.MEMORY_VALUE_MAX_LENGTH, required=False)
    category = trimmed_char(settings.MEMORY_CATEGORY_MAX_LENGTH, allow_blank=True, required=False)
    importance = UnitFloatField(required=False)
    confidence = UnitFloatField(required=False)

    def validate(self, attrs):
        memory = self.context["memory"]
        sent = {
            name: value
            for name, value in self.initial_data.items()
            if name in self.tolerated_fields and name not in self.fields
        }
        if isinstance(sent.get("scope"), str):
            sent["scope"] = scope_named(sent["scope"])
        if sent:
            stored = MemorySerializer(memory, context=self.context).data
            errors = {
                name: [read_only_help(name, memory)]
                for name, value in sent.items()
                if not same_json(value, stored[name])
            }
            if errors:
                raise serializers.ValidationError(errors)
        return attrs


class BulkIdsSerializer(StrictInputMixin, serializers.Serializer):
    ids = serializers.ListField(
        child=StrictUUIDField(), allow_empty=True, max_length=settings.BULK_IDS_MAX
    )


class CountSerializer(serializers.Serializer):
    active = serializers.IntegerField()
    pending = serializers.IntegerField()


class ApprovedCountSerializer(serializers.Serializer):
    approved = serializers.IntegerField()


class RejectedCountSerializer(serializers.Serializer):
    rejected = serializers.IntegerField()


class RevisionSerializer(serializers.ModelSerializer):
    actor_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = MemoryRevision
        fields = ["id", "memory_id", "action", "actor_id", "before", "after", "note", "created_at"]
        read_only_fields = fields


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


class TokenRequestSerializer(StrictInputMixin, serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=200, trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class RecallContextSerializer(StrictInputMixin, serializers.Serializer):
    """Which scopes a recall request draws from besides the caller's own (recall_scopes)."""

    topic_id = topic_ref()
    project_id = project_ref()
    persona_id = persona_ref()
    work_session_id = work_session_ref()


# What recall reads of a query (memories/recall/query.py), for the help texts below.
_RECALL_READS = (
    f"Recall reads its last {settings.RECALL_QUERY_READ_CHARS} characters, from a word on."
)


class SearchParamsSerializer(RecallContextSerializer):
    q = serializers.CharField(
        max_length=1000, help_text=f"What to look for: 1 to 1000 characters. {_RECALL_READS}"
    )
    top_k = serializers.IntegerField(
        min_value=1,
        max_value=50,
        default=settings.RECALL_SEARCH_TOP_K,
        help_text=f"How many results, 1 to 50; {settings.RECALL_SEARCH_TOP_K} when left out.",
    )
    as_of = as_of_field()


class ContextRequestSerializer(RecallContextSerializer):
    # As long as a message: products pass the user's message as it is.
    query = serializers.CharField(
        max_length=settings.MESSAGE_CONTENT_MAX_LENGTH,
        help_text=(
            "The user's message as it is, or the topic at hand: 1 to "
            f"{settings.MESSAGE_CONTENT_MAX_LENGTH} characters. {_RECALL_READS} The question "
            "is usually at the end of a message."
        ),
    )
    top_k = serializers.IntegerField(
        min_value=1,
        max_value=20,
        default=settings.RECALL_HINT_TOP_K,
        help_text=f"At most this many memories, 1 to 20; {settings.RECALL_HINT_TOP_K} if left out.",
    )
    as_of = as_of_field()


class ScorePartsSerializer(serializers.Serializer):
    relevance = serializers.FloatField()
    importance = serializers.FloatField()
    recency = serializers.FloatField()
    frequency = serializers.FloatField()
    scope_bonus = serializers.FloatField()


class RecallResultSerializer(MemorySerializer):
    """A memory plus its score and the parts the score is made of (serialises RecallHit)."""

    score = serializers.FloatField(read_only=True)
    score_parts = ScorePartsSerializer(read_only=True)

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "score", "score_parts"]
        read_only_fields = fields

    @cached_property
    def _memory_serializer(self) -> MemorySerializer:
        # Built once per response: a serializer's fields are costly to set up (~1 ms).
        return MemorySerializer(context=self.context)

    def to_representation(self, hit):
        data = dict(self._memory_serializer.to_representation(hit.memory))
        data["score"] = hit.score.total
        data["score_parts"] = hit.score.parts()
        return data


class ContextResponseSerializer(serializers.Serializer):
    hint = serializers.CharField()
    memories = RecallResultSerializer(many=True)


class RecallResultsSerializer(serializers.Serializer):
    """GET /api/memories/search and the memory_recall tool: {"data": [memory + score]}."""

    # A declared field, which the metaclass moves into the fields; the stubs take it for
    # an override of Serializer.data.
    data = RecallResultSerializer(many=True)  # type: ignore[assignment]


class ToolFunctionSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    parameters = serializers.DictField(help_text="JSON schema of the arguments (strict mode).")
    strict = serializers.BooleanField()


class ToolSerializer(serializers.Serializer):
    """One tool in OpenAI's function-calling format."""

    type = serializers.ChoiceField(choices=["function"])
    function = ToolFunctionSerializer()


class ToolListSerializer(serializers.Serializer):
    # A declared field, which the metaclass moves into the fields; the stubs take it for
    # an override of Serializer.data.
    data = ToolSerializer(many=True)  # type: ignore[assignment]


class SavedMemorySerializer(MemorySerializer):
    """The answer to a write: the memory that holds the fact (serialises saving.Saved)."""

    created = serializers.BooleanField(
        read_only=True,
        help_text="false: a current memory said this already (same key and value); it is "
        "answered, and nothing new was written.",
    )
    superseded_ids = serializers.ListField(
        child=serializers.UUIDField(),
        read_only=True,
        help_text="The current memories of this key that the write replaced (now archived).",
    )
    similar_ids = serializers.ListField(
        child=serializers.UUIDField(),
        read_only=True,
        allow_null=True,
        help_text="Other current memories of the scope that are near duplicates by meaning "
        "(nothing was changed about them); null when not looked up (a batch of more than "
        f"{settings.SAVE_SIMILAR_BATCH_MAX_ITEMS} items).",
    )

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "created", "superseded_ids", "similar_ids"]
        read_only_fields = fields

    @cached_property
    def _memory_serializer(self) -> MemorySerializer:
        return MemorySerializer(context=self.context)

    def to_representation(self, saved):
        data = dict(self._memory_serializer.to_representation(saved.memory))
        data["created"] = saved.created
        data["superseded_ids"] = [str(memory_id) for memory_id in saved.superseded_ids]
        data["similar_ids"] = (
            None
            if saved.similar_ids is None
            else [str(memory_id) for memory_id in saved.similar_ids]
        )
        return data


class SavedSerializer(serializers.Serializer):
    """The memory_save tool's answer."""

    memory = MemorySerializer()
    created = serializers.BooleanField(help_text="false: the fact was saved already.")
    superseded_ids = serializers.ListField(child=serializers.UUIDField())
    similar_ids = serializers.ListField(child=serializers.UUIDField())


class ForgottenSerializer(serializers.Serializer):
    """The memory_forget tool's answer: the id of the memory it deleted."""

    forgotten = serializers.UUIDField()
