"""Memories: their scopes and carriers, their text, vectors and revisions."""

import functools
import operator
import re
import uuid
from typing import NamedTuple

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from memories.models.carriers import Persona, Project, Topic, WorkSession
from memories.models.languages import language_of


class Scope(models.TextChoices):
    USER = "user"
    PERSONA = "persona"
    PERSONA_USER = "persona_user"
    PROJECT = "project"
    SESSION = "session"


class Source(models.TextChoices):
    MANUAL = "manual"
    CONVERSATION = "conversation"
    WORK = "work"
    TOOL = "tool"


class Status(models.TextChoices):
    ACTIVE = "active"
    PENDING_REVIEW = "pending_review"
    ARCHIVED = "archived"


# Which carriers (Memory's foreign keys) each scope sets; the others stay null. The one
# statement of the rule: the database constraint, the services' checks, the API's validation
# and the vector partition keys (their ids in the order of each tuple) come from it.
CARRIERS = ("user", "persona", "project", "topic")
SCOPE_CARRIERS: dict[str, tuple[str, ...]] = {
    Scope.USER: ("user",),
    Scope.PROJECT: ("user", "project"),
    Scope.SESSION: ("user", "topic"),
    Scope.PERSONA: ("persona",),
    Scope.PERSONA_USER: ("persona", "user"),
}


class CarrierIds(NamedTuple):
    """Where a memory sits: its scope and the ids of the carriers that scope sets (None for
    the others). Fact keys, recall scopes, the import's identities and the vector partitions
    are all this tuple."""

    scope: str
    user_id: uuid.UUID | None = None
    persona_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    topic_id: uuid.UUID | None = None

    @classmethod
    def of(cls, scope: str, **carriers) -> "CarrierIds":
        """From carrier objects by name (user=..., project=...); absent or None ones are None."""
        ids = (getattr(carriers.get(name), "id", None) for name in CARRIERS)
        return cls(scope, *ids)

    @property
    def partition(self) -> str:
        """The scope and the ids of its carriers, in SCOPE_CARRIERS order: "project:<user
        id>:<project id>". Stored vector rows carry these strings, so they must never change."""
        if self.scope not in SCOPE_CARRIERS:
            raise ValueError(f"unknown scope {self.scope!r}")
        ids = self._asdict()
        carrier_ids = (str(ids[f"{name}_id"]) for name in SCOPE_CARRIERS[self.scope])
        return ":".join([str(self.scope), *carrier_ids])

    @property
    def condition(self) -> Q:
        """The memories sitting here, as a filter on Memory."""
        return Q(**self._asdict())


def scope_carriers_condition() -> Q:
    """SCOPE_CARRIERS as a check on a Memory row: one of the scopes, with exactly its
    carriers set."""
    return functools.reduce(
        operator.or_,
        (
            Q(scope=scope, **{f"{name}__isnull": name not in carriers for name in CARRIERS})
            for scope, carriers in SCOPE_CARRIERS.items()
        ),
    )


def unexpired(moment) -> Q:
    """Memories that have not expired at `moment`: neither their own expires_at nor their
    retention rule's time has come. Recall, the default list and the keys' current holders
    read an expired memory as gone before the sweep archives it."""
    return (Q(expires_at__isnull=True) | Q(expires_at__gt=moment)) & (
        Q(retention_expires_at__isnull=True) | Q(retention_expires_at__gt=moment)
    )


_NOT_WORD = re.compile(r"[^\w\s]|_")


def normalise(text: str) -> str:
    """A key or value as writes compare them, and the key as the record keeps it
    (key_normalised): case folded, punctuation and underscores as spaces, runs of spaces as
    one ("Preferred_Language" is "preferred language")."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


class NormalisedKeyField(models.CharField):
    """The memory's key as normalise gives it, computed whenever the row is saved or
    bulk-created (a raw save, as import's, sets it itself)."""

    def pre_save(self, model_instance, add):
        value = normalise(model_instance.key)
        setattr(model_instance, self.attname, value)
        return value


class LanguageField(models.CharField):
    """The language the memory's value is written in (memories.recall.languages; "" when the
    guess is too unsure), computed whenever the row is saved or bulk-created (a raw save, as
    import's, sets it itself). Recall reads it to measure a memory in another language than
    the question fairly (memories.recall.calibration)."""

    def pre_save(self, model_instance, add):
        value = language_of(model_instance.value)
        setattr(model_instance, self.attname, value)
        return value


class Memory(models.Model):
    """One remembered fact. `user` is whom it is about (null for persona scope); the API's
    owner_id is the persona for persona scopes and the user otherwise."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.USER)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    persona = models.ForeignKey(Persona, null=True, blank=True, on_delete=models.CASCADE)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    topic = models.ForeignKey(Topic, null=True, blank=True, on_delete=models.CASCADE)
    key = models.CharField(max_length=settings.MEMORY_KEY_MAX_LENGTH)
    value = models.TextField()
    category = models.CharField(max_length=settings.MEMORY_CATEGORY_MAX_LENGTH, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MANUAL)
    source_channel_id = models.UUIDField(null=True, blank=True)
    importance = models.FloatField(default=0.5)
    confidence = models.FloatField(default=1.0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # Pinned: in every context hint of its scopes, ahead of what recall ranks, gate or not.
    pinned = models.BooleanField(default=False)
    # The product's own keys (memories/filters/metadata.py): filtered on, never ranked on.
    metadata = models.JSONField(default=dict, blank=True)
    # When it stops being current, as the product set it (null: never). Recall leaves it out
    # from then on; the retention sweep archives it (memories.retention).
    expires_at = models.DateTimeField(null=True, blank=True)
    # When the tenant's retention rules make it stop being current (valid_from + the days of
    # the shortest rule matching it; null: no rule does), and that rule. Computed, never
    # written by hand (memories.retention.expiry): by a rule's save for the tenant's current
    # memories, by a write that may have expired its memory already (an old valid_from, a
    # new category), and by the sweep for the rest written since; a memory current for less
    # than a day may lack it until then, as no rule (days >= 1) could have expired it yet.
    # Kept apart from expires_at so that neither overwrites the other, and the revision of
    # an expiry can say which came first.
    retention_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # No constraint and no index: nothing looks memories up by rule (a rule's change
    # recomputes its tenant's memories), and an archived memory keeps naming the rule that
    # expired it after the rule is deleted.
    retention_rule = models.ForeignKey(
        "memories.RetentionRule",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
        editable=False,
    )
    # The memory a replacement takes the place of (an extracted proposal names it before it
    # is approved), and on the replaced one, the memory that took its place.
    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replacements"
    )
    # No database constraint: an import writes a memory before the one that replaced it
    # (files are oldest first, in chunks of their own transactions).
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    # The key as writes compare it (memories.models.normalise): a key names one fact of a scope.
    key_normalised = NormalisedKeyField(max_length=settings.MEMORY_KEY_MAX_LENGTH, editable=False)
    # Null for a memory saved before the field until the migration's guess: a nullable column
    # is added without rewriting the table (SQLite would rebuild it, and lose its triggers).
    language = LanguageField(max_length=8, null=True, blank=True, editable=False)
    # When the fact became current, and when it stopped being current (null while it is;
    # set when it was superseded or archived). A pending memory becomes current when approved.
    valid_from = models.DateTimeField(default=timezone.now)
    valid_until = models.DateTimeField(null=True, blank=True)
    # Provenance of an extracted memory: the conversation or work session it was read from,
    # and the ids of that source's messages that say it (empty when the model cited none).
    # Null and empty for memories written by hand or by tools.
    source_topic = models.ForeignKey(
        Topic, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_work_session = models.ForeignKey(
        WorkSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_message_ids = models.JSONField(default=list, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "memories"
        indexes = [
            models.Index(fields=["user", "scope", "status"]),
            models.Index(fields=["persona", "scope", "status"]),
            models.Index(fields=["status", "created_at"]),
            # The memories holding a key in a scope (one row per fact, on every write).
            models.Index(fields=["user", "key_normalised"], name="memory_user_key"),
            models.Index(fields=["persona", "key_normalised"], name="memory_persona_key"),
            # The few pinned memories, read on every context call: an index of them alone.
            models.Index(
                fields=["user", "persona"], condition=Q(pinned=True), name="memory_pinned"
            ),
            # Only the memories that expire, for the retention sweep (memories.retention).
            models.Index(
                fields=["expires_at"],
                condition=Q(expires_at__isnull=False),
                name="memory_expires_at",
            ),
            models.Index(
                fields=["retention_expires_at"],
                condition=Q(retention_expires_at__isnull=False),
                name="memory_retention_expires_at",
            ),
            # What changed since the last profile sweep (memories.profiles.sweep).
            models.Index(fields=["updated_at"], name="memory_updated_at"),
            # A user's current memories of their own scope, most important first: what a
            # profile lists and its fingerprint counts, read from the index alone (a user of
            # 100,000 memories: 170 ms to write a summary without it, 10 with it).
            models.Index(
                fields=["user", "-importance", "-updated_at", "id"],
                condition=Q(
                    scope="user",
                    status="active",
                    valid_until__isnull=True,
                    deleted_at__isnull=True,
                ),
                name="memory_profile_current",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(importance__gte=0, importance__lte=1), name="memory_importance_0_1"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1), name="memory_confidence_0_1"
            ),
            # The scope decides which carriers are set; the database refuses any other mix.
            models.CheckConstraint(
                name="memory_scope_carriers", condition=scope_carriers_condition()
            ),
            models.CheckConstraint(
                name="memory_one_source",
                condition=Q(source_topic__isnull=True) | Q(source_work_session__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.value[:60]}"

    def save(self, *args, update_fields=None, **kwargs):
        if update_fields is not None and "key" in update_fields:
            update_fields = [*update_fields, "key_normalised"]
        if update_fields is not None and "value" in update_fields:
            update_fields = [*update_fields, "language"]
        super().save(*args, update_fields=update_fields, **kwargs)

    @property
    def owner_id(self):
        if self.scope in (Scope.PERSONA, Scope.PERSONA_USER):
            return self.persona_id
        return self.user_id

    @property
    def persona_user_id(self):
        """The API's user_id: set only for persona_user scope."""
        return self.user_id if self.scope == Scope.PERSONA_USER else None

    def carrier_ids(self) -> CarrierIds:
        return CarrierIds(self.scope, self.user_id, self.persona_id, self.project_id, self.topic_id)

    @property
    def embedding_text(self) -> str:
        return f"{self.key}: {self.value}"


class MemoryEmbedding(models.Model):
    """Which model embedded a memory. On PostgreSQL the vector lives here (pgvector, HNSW
    index per dimension); on SQLite it lives in the sqlite-vec table vec_memory_embeddings and
    `vector` stays null."""

    memory = models.OneToOneField(
        Memory, primary_key=True, on_delete=models.CASCADE, related_name="embedding"
    )
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    vector = VectorField(null=True, blank=True)
    # Copies of the memory's partition and status, so a vector search filters without a join.
    partition = models.CharField(max_length=120)
    status = models.CharField(max_length=16, choices=Status.choices)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["partition", "status", "dimensions"])]

    def __str__(self) -> str:
        return f"{self.model} ({self.dimensions})"


class RevisionAction(models.TextChoices):
    CREATE = "create"
    EDIT = "edit"
    MERGE = "merge"
    APPROVE = "approve"
    REJECT = "reject"
    ARCHIVE = "archive"
    DELETE = "delete"
    RESTORE = "restore"
    IMPORT = "import"
    EXPIRE = "expire"


class MemoryRevision(models.Model):
    """One change to a memory: who made it, the values before and the values after."""

    id = models.BigAutoField(primary_key=True)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="revisions")
    action = models.CharField(max_length=16, choices=RevisionAction.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Null when the system made the change (extraction, a tool call without user).",
    )
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    note = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["memory", "-id"])]

    def __str__(self) -> str:
        return f"{self.action} {self.memory_id}"
