"""How each object that leaves the service reads: the memory, the consolidation proposal,
the entity, the end user and their profile, as the REST API answers them and as webhook
events carry them (an extraction run: extraction.representations). Output only; the API's
inputs are its own."""

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.models import (
    ConsolidationProposal,
    Entity,
    Memory,
    Profile,
    Status,
    SummaryWriter,
    User,
)

# Serializer class -> its readable fields, built once (see MemorySerializer.to_representation).
_fields_by_class: dict[type, list] = {}


def _readable_fields_of(serializer_class: type) -> list:
    """(name, field) of each field a serializer class outputs, built once per class (a
    race builds it twice; either list is right)."""
    fields = _fields_by_class.get(serializer_class)
    if fields is None:
        fields = [(field.field_name, field) for field in serializer_class()._readable_fields]
        _fields_by_class[serializer_class] = fields
    return fields


@extend_schema_field({"type": "object", "additionalProperties": True})
class MetadataOutputField(serializers.JSONField):
    """The product's own keys, as saved (a JSON object, {} when none)."""


class MemorySerializer(serializers.ModelSerializer):
    owner_id = serializers.UUIDField(read_only=True, allow_null=True)
    metadata = MetadataOutputField(
        read_only=True, help_text="Your own keys, as saved ({} when none). Never ranked on."
    )
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
    expires_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="When it stops being current, as you set it (null: never). From then on "
        "recall leaves it out, and the retention sweep archives it.",
    )
    retention_expires_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="When your retention rules make it stop being current: valid_from plus the "
        "days of the shortest rule matching it (null: none does). Written when a rule is "
        "saved, and by the retention sweep for memories saved since.",
    )
    retention_rule_id = serializers.UUIDField(
        read_only=True,
        allow_null=True,
        help_text="The retention rule that gives retention_expires_at.",
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
            "pinned",
            "metadata",
            "supersedes_id",
            "superseded_by_id",
            "valid_from",
            "valid_until",
            "expires_at",
            "retention_expires_at",
            "retention_rule_id",
            "access_count",
            "last_accessed_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_external_user_id(self, memory: Memory) -> str | None:
        return external_user_id(memory, self.context.get("request"))

    def to_representation(self, memory):
        # DRF builds a ModelSerializer's fields anew for every serializer (~0.5 ms, each
        # response) and walks them through generic checks for every item; the fields of a
        # class are built once here instead and read straight. Only the method fields need
        # this serializer (its context); the others are the same for every request.
        data = {}
        for name, field in _readable_fields_of(type(self)):
            if isinstance(field, serializers.SerializerMethodField):
                data[name] = getattr(self, field.method_name)(memory)
                continue
            value = field.get_attribute(memory)
            data[name] = None if value is None else field.to_representation(value)
        return data


class ConsolidationProposalSerializer(serializers.ModelSerializer):
    user_id = serializers.UUIDField(read_only=True)
    memories = MemorySerializer(many=True, read_only=True)
    memory_ids = serializers.SerializerMethodField(
        help_text="The ids of `memories`, sorted: what a webhook receiver keeps to match them."
    )
    keep_id = serializers.UUIDField(
        read_only=True,
        allow_null=True,
        help_text="merge: the memory that keeps its id and takes key and value; the others "
        "are archived.",
    )
    key = serializers.CharField(read_only=True, help_text="merge: the merged key ('' else).")
    value = serializers.CharField(read_only=True, help_text="merge: the merged value ('' else).")
    decided_by_id = serializers.UUIDField(
        read_only=True, allow_null=True, help_text="Null for a withdrawn proposal."
    )

    class Meta:
        model = ConsolidationProposal
        fields = [
            "id",
            "kind",
            "status",
            "user_id",
            "memories",
            "memory_ids",
            "keep_id",
            "key",
            "value",
            "similarity",
            "reason",
            "created_at",
            "decided_at",
            "decided_by_id",
            "decision_note",
        ]
        read_only_fields = fields

    def get_memory_ids(self, proposal: ConsolidationProposal) -> list[str]:
        # From the memories the view prefetched, not a query of their own.
        return sorted(str(memory.id) for memory in proposal.memories.all())


class UserSerializer(serializers.ModelSerializer):
    active = serializers.IntegerField(read_only=True, help_text="Live active memories.")
    pending = serializers.IntegerField(read_only=True, help_text="Memories pending review.")

    class Meta:
        model = User
        fields = ["id", "username", "external_id", "is_staff", "date_joined", "active", "pending"]
        read_only_fields = fields


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


class EntitySerializer(serializers.ModelSerializer):
    user_id = serializers.UUIDField(read_only=True)
    memory_count = serializers.SerializerMethodField(
        help_text="Its current memories (active, not deleted)."
    )

    class Meta:
        model = Entity
        fields = [
            "id",
            "user_id",
            "kind",
            "relation",
            "name",
            "aliases",
            "memory_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_memory_count(self, entity: Entity) -> int:
        counted = getattr(entity, "current_memories", None)  # annotated by the list
        if counted is not None:
            return counted
        return entity.memories.filter(status=Status.ACTIVE, deleted_at__isnull=True).count()


class EntityDetailSerializer(EntitySerializer):
    memories = serializers.SerializerMethodField(help_text="Its current memories, latest first.")

    class Meta(EntitySerializer.Meta):
        fields = [*EntitySerializer.Meta.fields, "memories"]
        read_only_fields = fields

    @extend_schema_field(MemorySerializer(many=True))
    def get_memories(self, entity: Entity) -> Any:
        current = entity.memories.filter(status=Status.ACTIVE, deleted_at__isnull=True)
        return MemorySerializer(
            current.order_by("-updated_at", "id"), many=True, context=self.context
        ).data


class ProfileSummarySerializer(serializers.ModelSerializer):
    """The summary of a profile, as the profile, the context and the tools give it."""

    text = serializers.CharField(source="summary", read_only=True)
    written_by = serializers.ChoiceField(
        choices=SummaryWriter.choices,
        read_only=True,
        help_text="template, or llm when the configured LLM wrote it.",
    )
    made_at = serializers.DateTimeField(read_only=True)
    memories_read = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text="The memories it was written from: [{id, updated_at}] (their versions).",
    )
    error = serializers.CharField(
        read_only=True, help_text="Why the LLM did not write it (the template did); '' if none."
    )

    class Meta:
        model = Profile
        fields = ["text", "written_by", "made_at", "memories_read", "error"]
        read_only_fields = fields


def profile_summary_data(profile: Profile | None) -> dict | None:
    """The summary as context answers it: None without one."""
    return None if profile is None else ProfileSummarySerializer(profile).data


class CategoryGroupSerializer(serializers.Serializer):
    category = serializers.CharField(help_text="'' for the memories without a category.")
    memories = MemorySerializer(many=True)


class RelationGroupSerializer(serializers.Serializer):
    relation = serializers.CharField(help_text="'' for the entities without a relation.")
    entities = EntitySerializer(many=True)


class ProfileSerializer(serializers.Serializer):
    """Who a user is (memories.profiles.contents.ProfileContents): pins, current memories by
    category, entities by relation, and the summary written in the background."""

    user_id = serializers.UUIDField(source="user.id")
    external_user_id = serializers.CharField(source="user.external_id", allow_null=True)
    pinned = MemorySerializer(many=True)
    categories = serializers.SerializerMethodField(
        help_text="The current memories that are not pinned, most important first in each group."
    )
    memory_count = serializers.IntegerField(
        help_text="How many current memories there are besides the pinned ones."
    )
    truncated = serializers.BooleanField(
        help_text="Whether categories holds fewer than memory_count (PROFILE_MEMORIES_MAX)."
    )
    entities = serializers.SerializerMethodField(
        help_text="The entities with current memories, grouped by their relation to the user."
    )
    summary = serializers.SerializerMethodField(
        help_text="null until the background task first writes it (after the first change)."
    )
    summary_stale = serializers.BooleanField(
        help_text="Memories or entities changed since the summary was written; the next "
        "periodic run writes it again."
    )

    @extend_schema_field(CategoryGroupSerializer(many=True))
    def get_categories(self, contents) -> Any:
        return [
            {
                "category": category,
                "memories": MemorySerializer(memories, many=True, context=self.context).data,
            }
            for category, memories in contents.by_category()
        ]

    @extend_schema_field(RelationGroupSerializer(many=True))
    def get_entities(self, contents) -> Any:
        return [
            {
                "relation": relation,
                "entities": EntitySerializer(entities, many=True, context=self.context).data,
            }
            for relation, entities in contents.by_relation()
        ]

    @extend_schema_field(ProfileSummarySerializer(allow_null=True))
    def get_summary(self, contents) -> Any:
        if contents.saved is None:
            return None
        return ProfileSummarySerializer(contents.saved, context=self.context).data
