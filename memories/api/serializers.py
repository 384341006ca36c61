"""Input validation and output shapes. No writes here: views call services."""

from functools import cached_property

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.api.fields import (
    FilterField,
    FilterTextField,
    FutureDateTimeField,
    MetadataField,
    ScopeField,
    as_of_field,
    min_relevance_field,
    persona_ref,
    project_ref,
    topic_ref,
    work_session_ref,
)
from memories.carriers import carrier_errors, scope_named
from memories.models import (
    EntityKind,
    Memory,
    MemoryRevision,
    Scope,
    Status,
)
from memories.representations import MemorySerializer, ProfileSummarySerializer
from memories.retention.expiry import EXPIRY_PASSED
from rest.fields import (
    PastDateTimeField,
    StrictBooleanField,
    StrictInputMixin,
    StrictUUIDField,
    UnitFloatField,
    trimmed_char,
)


class EntityMentionSerializer(StrictInputMixin, serializers.Serializer):
    """An entity a memory is about, as a save names it."""

    name = trimmed_char(200)
    kind = serializers.ChoiceField(choices=EntityKind.choices, default=EntityKind.OTHER)
    relation = trimmed_char(
        100, allow_blank=True, default="", help_text="What it is to the user: wife, dog, employer."
    )


class MemoryCreateSerializer(StrictInputMixin, serializers.Serializer):
    scope = ScopeField(default=Scope.USER)
    key = trimmed_char(settings.MEMORY_KEY_MAX_LENGTH)
    value = trimmed_char(settings.MEMORY_VALUE_MAX_LENGTH)
    category = trimmed_char(settings.MEMORY_CATEGORY_MAX_LENGTH, allow_blank=True, default="")
    importance = UnitFloatField(default=0.5)
    confidence = UnitFloatField(default=1.0)
    entities = serializers.ListField(
        child=EntityMentionSerializer(),
        required=False,
        max_length=20,
        help_text=(
            "The people, pets, places or organisations the memory is about; each links to the "
            "user's entity of that name or alias (case and accents aside), made when missing."
        ),
    )
    pinned = StrictBooleanField(
        default=False,
        help_text=(
            "In every context hint of its scopes, ahead of the ranked memories, whether the "
            "request is about it or not (at most MEMORY_PINNED_MAX per user, 20 by default)."
        ),
    )
    metadata = MetadataField(
        required=False,
        help_text=(
            "Your own keys (a JSON object, at most MEMORY_METADATA_MAX_BYTES of JSON): where "
            "it came from, a ticket id, a locale. Filtered on, never ranked on."
        ),
    )
    project_id = project_ref()
    persona_id = persona_ref()
    topic_id = StrictUUIDField(required=False, allow_null=True)
    source_channel_id = StrictUUIDField(required=False, allow_null=True)
    valid_from = PastDateTimeField(
        required=False,
        allow_null=True,
        help_text="Since when the fact holds (ISO 8601, not in the future); now when left out.",
    )
    expires_at = FutureDateTimeField(
        required=False,
        allow_null=True,
        help_text=(
            "When the fact stops being current (ISO 8601, in the future): recall leaves it out "
            "from then on, and the retention sweep archives it. Left out or null: it does not "
            "expire (unless a retention rule says so)."
        ),
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
            if isinstance(messages, dict):  # a path below the field (metadata.ticket.id)
                for below, inner in messages.items():
                    errors[f"{key}.{below}"] = [str(message) for message in inner]
            else:
                errors[key] = [str(message) for message in messages]
    if errors:
        raise serializers.ValidationError(errors)
    return {name: items}


def batch_item_field(item_serializer) -> serializers.JSONField:
    """A batch's item: any JSON here (validated_items validates each as `item_serializer`,
    naming `name[i].field`), described in the schema as an `item_serializer` body."""

    @extend_schema_field(item_serializer)
    class BatchItemField(serializers.JSONField):
        pass

    return BatchItemField()


class MemoryBatchCreateSerializer(StrictInputMixin, serializers.Serializer):
    """{"memories": [<create body>, ...]}: each item validated as POST /api/memories, all
    or nothing; errors are keyed `memories[i].field`."""

    memories = serializers.ListField(
        child=batch_item_field(MemoryCreateSerializer),
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
    pinned = StrictBooleanField(required=False, help_text="true pins it, false unpins it.")
    metadata = MetadataField(
        required=False,
        help_text=(
            "PATCH: a JSON merge patch (RFC 7386) of the metadata: a key set to null is "
            "removed, an object merges into an object, other values replace. PUT: the new "
            "metadata, whole."
        ),
    )
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text=(
            "When it stops being current (ISO 8601, in the future; the time it has may be "
            "sent back unchanged); null: it does not expire."
        ),
    )

    def validate_expires_at(self, value):
        # A GET body sent back (PUT) holds the time it has, passed or not.
        if value is not None and value <= timezone.now():
            if value != self.context["memory"].expires_at:
                raise serializers.ValidationError(EXPIRY_PASSED)
        return value

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


FILTER_HELP = (
    "Only memories this filter matches (docs/api.md, Filters): a JSON object of and/or/not "
    "and field conditions (eq, ne, in, nin, gt, gte, lt, lte, contains, exists) on category, "
    "key, scope, source, importance, confidence, created_at, updated_at, valid_from, pinned "
    "and metadata.<key>[.<key>...]."
)
FILTER_QUERY_HELP = FILTER_HELP + " In a query string, the object's JSON text."


class BulkReviewSerializer(StrictInputMixin, serializers.Serializer):
    """The pending memories a bulk review decides: listed by id, or those a filter matches
    (at most BULK_IDS_MAX of them, the oldest first), or both (the listed ones it matches)."""

    ids = serializers.ListField(
        child=StrictUUIDField(),
        allow_empty=True,
        max_length=settings.BULK_IDS_MAX,
        required=False,
    )
    filter = FilterField(required=False, help_text=FILTER_HELP)

    def validate(self, attrs):
        if "ids" not in attrs and attrs.get("filter") is None:
            raise serializers.ValidationError({"ids": ["Give ids, a filter, or both."]})
        return attrs


class CountSerializer(serializers.Serializer):
    active = serializers.IntegerField()
    pending = serializers.IntegerField()


class ApprovedCountSerializer(serializers.Serializer):
    approved = serializers.IntegerField()


class RejectedCountSerializer(serializers.Serializer):
    rejected = serializers.IntegerField()


class RevisionSnapshotSerializer(serializers.Serializer):
    """A memory's fields as a revision keeps them (services.revisions.snapshot). Revisions
    written before a memory had supersession and validity lack those four fields, and those
    written before pins lack `pinned`, before metadata `metadata`, before retention
    `expires_at`, `retention_expires_at` and `retention_rule_id`."""

    key = serializers.CharField()
    value = serializers.CharField()
    category = serializers.CharField(allow_blank=True)
    importance = serializers.FloatField()
    confidence = serializers.FloatField()
    pinned = serializers.BooleanField(required=False)
    metadata = serializers.DictField(required=False)
    status = serializers.ChoiceField(choices=Status.choices)
    scope = serializers.ChoiceField(choices=Scope.choices)
    supersedes_id = serializers.UUIDField(allow_null=True, required=False)
    superseded_by_id = serializers.UUIDField(allow_null=True, required=False)
    valid_from = serializers.DateTimeField(allow_null=True, required=False)
    valid_until = serializers.DateTimeField(allow_null=True, required=False)
    expires_at = serializers.DateTimeField(allow_null=True, required=False)
    retention_expires_at = serializers.DateTimeField(allow_null=True, required=False)
    retention_rule_id = serializers.UUIDField(allow_null=True, required=False)


@extend_schema_field(RevisionSnapshotSerializer)
class RevisionSnapshotField(serializers.JSONField):
    """A revision's before or after: the stored JSON as it is, typed in the schema."""


class RevisionSerializer(serializers.ModelSerializer):
    actor_id = serializers.UUIDField(read_only=True, allow_null=True)
    before = RevisionSnapshotField(
        read_only=True, allow_null=True, help_text="The memory before the change; null on create."
    )
    after = RevisionSnapshotField(read_only=True, help_text="The memory after the change.")

    class Meta:
        model = MemoryRevision
        fields = ["id", "memory_id", "action", "actor_id", "before", "after", "note", "created_at"]
        read_only_fields = fields


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


MIN_RELEVANCE_HELP = (
    "0 to 1: return the memories whose relevance (score_parts.relevance before the weights: "
    "how close the memory is to the query and how many of its words it holds) reaches it, "
    "instead of the relevance gate's decision. 0 returns the top_k by score whatever the gate "
    "says (a search box, an admin); left out, the gate decides, which keeps memories that "
    "do not bear on the query out."
)


EXPLAIN_HELP = (
    "true adds `explanation`: how the query was read, and every memory recall considered, "
    "returned or not, with its score parts, the gate's decision and the reason in words. An "
    "explained call counts as no access to the memories."
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
    min_relevance = min_relevance_field(MIN_RELEVANCE_HELP)
    filter = FilterTextField(required=False, help_text=FILTER_QUERY_HELP)
    explain = serializers.BooleanField(default=False, help_text=EXPLAIN_HELP)


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
    profile = StrictBooleanField(
        default=False,
        help_text=(
            "true puts the user's profile summary (GET /api/me/profile) at the head of the "
            "hint, and gives it as `profile`. It is the summary written last, so it cannot go "
            "with as_of."
        ),
    )
    filter = FilterField(required=False, help_text=FILTER_HELP)
    explain = StrictBooleanField(default=False, help_text=EXPLAIN_HELP)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if attrs.get("profile") and attrs.get("as_of") is not None:
            raise serializers.ValidationError(
                {"profile": "The profile summary is of now: leave out as_of, or profile."}
            )
        return attrs


class ScorePartsSerializer(serializers.Serializer):
    relevance = serializers.FloatField()
    entity = serializers.FloatField(
        help_text="What naming one of the memory's entities (or their group) added."
    )
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


class QueryReadingSerializer(serializers.Serializer):
    read = serializers.CharField(
        help_text="The part of the query recall read: the end of a long one."
    )
    cut = serializers.BooleanField(help_text="Whether that is less than the whole query.")
    language = serializers.CharField(
        allow_null=True,
        help_text="The query's language (ISO 639-1), null when too short or unsure to tell.",
    )
    language_probability = serializers.FloatField(allow_null=True)
    about_user_probability = serializers.FloatField(
        allow_null=True,
        help_text="How likely the query is about the user, null without an embedder.",
    )
    about_user = serializers.BooleanField(
        help_text="Read as about the user: memories nearest to it may pass on that alone."
    )
    read_as = serializers.CharField(
        allow_null=True,
        help_text="Why similarity alone may let no memory in (small talk with the assistant, "
        "a question about someone else), else null.",
    )


class ConsideredSerializer(serializers.Serializer):
    """One memory recall considered (memories.recall.explain.Considered)."""

    memory = MemorySerializer()
    decision = serializers.ChoiceField(choices=["returned", "excluded"])
    reason = serializers.CharField(help_text="The decision in words.")
    gate = serializers.CharField(
        allow_null=True,
        help_text="The gate's decision (entity, words, meaning, nearest: let in; no_words, "
        "far_not_about_user, far_from_nearest: left out); null when the gate was not asked "
        "(min_relevance, pinned, expired).",
    )
    score = serializers.FloatField(
        allow_null=True, help_text="What it scored, or would have scored had the gate let it in."
    )
    score_parts = ScorePartsSerializer(allow_null=True)
    similarity = serializers.FloatField(
        allow_null=True, help_text="Cosine similarity to the query, null without an embedder."
    )
    calibrated_similarity = serializers.FloatField(
        allow_null=True,
        help_text="The similarity in standard deviations above ordinary memories' (the gate's).",
    )
    keyword_evidence = serializers.FloatField(
        help_text="Share of the query's word weight found in the memory."
    )
    entity_evidence = serializers.FloatField()

    @cached_property
    def _memory_serializer(self) -> MemorySerializer:
        return MemorySerializer(context=self.context)

    def to_representation(self, considered):
        score = considered.score
        return {
            "memory": self._memory_serializer.to_representation(considered.memory),
            "decision": considered.decision,
            "reason": considered.reason,
            "gate": str(considered.gate) if considered.gate is not None else None,
            "score": score.total if score is not None else None,
            "score_parts": score.parts() if score is not None else None,
            "similarity": considered.similarity,
            "calibrated_similarity": considered.calibrated_similarity,
            "keyword_evidence": considered.keyword_evidence,
            "entity_evidence": considered.entity_evidence,
        }


class ExplanationSerializer(serializers.Serializer):
    query = QueryReadingSerializer()
    candidates = ConsideredSerializer(
        many=True, help_text="Every memory considered, the returned ones first, best first."
    )


class ContextResponseSerializer(serializers.Serializer):
    hint = serializers.CharField()
    memories = RecallResultSerializer(many=True)
    profile = ProfileSummarySerializer(
        allow_null=True,
        help_text="The profile summary at the hint's head: null unless profile was true and "
        "one has been written.",
    )


class ExplainedContextSerializer(ContextResponseSerializer):
    """POST /api/memories/context (explanation only with explain=true)."""

    explanation = ExplanationSerializer(required=False, help_text="Only with explain=true.")


class RecallResultsSerializer(serializers.Serializer):
    """GET /api/memories/search and the memory_recall tool: {"data": [memory + score]}."""

    # A declared field, which the metaclass moves into the fields; the stubs take it for
    # an override of Serializer.data.
    data = RecallResultSerializer(many=True)  # type: ignore[assignment]


class ExplainedSearchSerializer(RecallResultsSerializer):
    """GET /api/memories/search?explain=true."""

    explanation = ExplanationSerializer(required=False, help_text="Only with explain=true.")


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


class PendingParamsSerializer(serializers.Serializer):
    """GET /api/admin/memories/pending: besides the page, a filter. Unknown parameters (the
    page's) are the paginator's."""

    filter = FilterTextField(required=False, help_text=FILTER_QUERY_HELP)
