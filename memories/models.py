"""Memory records and the scope carriers they point at (personas, projects, topics, work
sessions and their messages)."""

import functools
import operator
import uuid

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from memories.facts import normalise

DEFAULT_TENANT_SLUG = "default"


class Tenant(models.Model):
    """A product served by this installation. Its API keys act for its own end users only:
    the same X-User-Id through keys of two tenants names two different users."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug


class User(AbstractUser):
    """A person using the chat product. UUID ids, so memory owner ids are UUIDs everywhere.
    `external_id` is the product's own id for its end user, when the product reaches us with
    an API key and X-User-Id instead of a login of ours; it is unique within its tenant.
    `tenant` is set for end users and for API keys' own accounts (whose staff rights then
    reach their tenant's end users only); local logins have none."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Null, not "", for a local login: the per-tenant uniqueness covers set ids only.
    external_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="users"
    )
    # Set when an erasure hides the user (memories.erasure): from then on they cannot sign in,
    # are listed nowhere and their external id names nobody; the rows go in short batches, and
    # an erasure a crash stopped is finished later (finish_erasures, Celery beat).
    erasure_started_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta(AbstractUser.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "external_id"],
                condition=Q(external_id__isnull=False),
                name="user_external_id_per_tenant",
            )
        ]


class ApiKeyScope(models.TextChoices):
    READ = "read"
    WRITE = "write"
    REVIEW = "review"


class ApiKey(models.Model):
    """A service key of a product backend. Only the SHA-256 of the key is stored: keys are
    random 256-bit strings, so a fast hash is as safe as a slow one and costs nothing per
    request. `account` is the key's own user: the actor when the key acts as itself (review
    endpoints), staff exactly when the key has the review scope."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=16, editable=False, help_text="The key's first characters, to tell keys apart."
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="api_keys")
    scopes = models.JSONField(default=list)
    account = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_key", editable=False
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


class Persona(models.Model):
    """An assistant persona; its users share persona-scope memories."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    memory_enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
    """A managed project of one user; project-scope memories stay inside it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Topic(models.Model):
    """A conversation of one user, mirrored from the chat product."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    title = models.CharField(max_length=200, blank=True, default="")
    persona = models.ForeignKey(Persona, null=True, blank=True, on_delete=models.SET_NULL)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL)
    channel_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.title or str(self.id)


class MessageRole(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"


class Message(models.Model):
    """One message of a topic. The integer id orders messages and marks extraction progress."""

    id = models.BigAutoField(primary_key=True)
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["topic", "id"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class WorkSession(models.Model):
    """An agent's working session, optionally inside a managed project."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return str(self.id)


class WorkSessionMessage(models.Model):
    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(WorkSession, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["session", "id"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class ConfigEntry(models.Model):
    """Global configuration keys such as memory_extraction_enabled."""

    key = models.CharField(max_length=100, primary_key=True)
    value = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.key


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


class NormalisedKeyField(models.CharField):
    """The memory's key as facts.normalise gives it, computed whenever the row is saved or
    bulk-created (a raw save, as import's, sets it itself)."""

    def pre_save(self, model_instance, add):
        value = normalise(model_instance.key)
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
    # The key as writes compare it (facts.normalise): a key names one fact of a scope.
    key_normalised = NormalisedKeyField(max_length=settings.MEMORY_KEY_MAX_LENGTH, editable=False)
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

    @property
    def embedding_text(self) -> str:
        return f"{self.key}: {self.value}"


class KeywordPartition(models.Model):
    """Totals of one partition (an owner and scope carrier, see partition_key) that keyword
    ranking reads: its active memories and their indexed words. Each user's ranking uses only
    the partitions they may read, so nobody's scores depend on anyone else's memories."""

    partition = models.CharField(max_length=120, unique=True)
    memories = models.PositiveIntegerField(default=0)
    words = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return self.partition


class KeywordTerm(models.Model):
    """How many active memories of a partition hold a word (its document frequency). A row
    goes when its count reaches 0, so no word of a deleted memory stays behind."""

    partition = models.ForeignKey(KeywordPartition, on_delete=models.CASCADE, db_index=False)
    term = models.CharField(max_length=64)
    memories = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["partition", "term"], name="keyword_term_unique")
        ]

    def __str__(self) -> str:
        return self.term


class KeywordPosting(models.Model):
    """One word of one active memory: how often it occurs, and the memory's length in
    indexed words (for BM25's length normalisation)."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, db_index=False)
    partition = models.ForeignKey(KeywordPartition, on_delete=models.CASCADE, db_index=False)
    term = models.CharField(max_length=64)
    occurrences = models.PositiveIntegerField()
    length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            # Postings of a word in the caller's partitions (the search).
            models.Index(fields=["partition", "term"], name="keyword_posting_term"),
            # A memory's postings (unindexing, and the common words of found memories).
            models.Index(fields=["memory", "term"], name="keyword_posting_memory"),
        ]

    def __str__(self) -> str:
        return self.term


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


class ProposalKind(models.TextChoices):
    MERGE = "merge"
    ARCHIVE = "archive"


class ProposalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class ConsolidationProposal(models.Model):
    """A change consolidation proposes to a user's memories, waiting for a reviewer: merge
    near-duplicates (`keep` takes `key` and `value`, the others are archived) or archive one
    that nobody has recalled or updated for long. Nothing changes until it is approved.
    `fingerprint` names the memories as they were when proposed: the same memories, unchanged,
    are never proposed twice, whatever became of the first proposal."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=16, choices=ProposalKind.choices)
    status = models.CharField(
        max_length=16, choices=ProposalStatus.choices, default=ProposalStatus.PENDING
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    memories = models.ManyToManyField(Memory, related_name="consolidation_proposals")
    keep = models.ForeignKey(
        Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    key = models.CharField(max_length=settings.MEMORY_KEY_MAX_LENGTH, blank=True, default="")
    value = models.TextField(blank=True, default="")
    similarity = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=300)
    fingerprint = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Null for a proposal withdrawn by consolidation (its memories changed).",
    )
    decision_note = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["status", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.kind} ({self.status})"
