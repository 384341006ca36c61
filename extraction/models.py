"""How far extraction has read each source, and a record of every extraction run."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memories.models import Topic, WorkSession


class SourceKind(models.TextChoices):
    TOPIC = "topic"
    WORK_SESSION = "work_session"


class ExtractionState(models.Model):
    """One row per source. `last_message_id` is the cursor: the next run reads only messages
    after it. `claimed_until`/`claim_token` let one worker at a time work on a source."""

    topic = models.OneToOneField(Topic, null=True, blank=True, on_delete=models.CASCADE)
    work_session = models.OneToOneField(
        WorkSession, null=True, blank=True, on_delete=models.CASCADE
    )
    last_message_id = models.BigIntegerField(default=0)
    last_extracted_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="extraction_state_one_source",
                condition=Q(topic__isnull=False, work_session__isnull=True)
                | Q(topic__isnull=True, work_session__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"{self.topic_id or self.work_session_id} @ {self.last_message_id}"


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    SKIPPED = "skipped"
    FAILED = "failed"


class ExtractionRun(models.Model):
    """One extraction attempt on one source, from the moment it is queued to its outcome.
    `task_id` is what the extraction endpoints answer and GET /api/extraction-runs/{task_id}
    reads; a run made without a task uses its own id there."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    source_kind = models.CharField(max_length=16, choices=SourceKind.choices)
    source_id = models.UUIDField()
    task_id = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices)
    reason = models.CharField(max_length=300, blank=True, default="")
    extractor = models.CharField(max_length=16, blank=True, default="")
    from_message_id = models.BigIntegerField(null=True, blank=True)
    to_message_id = models.BigIntegerField(null=True, blank=True)
    created = models.PositiveIntegerField(default=0)
    merged = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    memory_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["source_kind", "source_id", "-created_at"]),
            models.Index(fields=["created_at"]),
            models.Index(fields=["user", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.source_kind} {self.source_id}: {self.status}"

    def result(self) -> dict:
        return {"created": self.created, "merged": self.merged, "skipped": self.skipped}


class ExtractionSettings(models.Model):
    """How extraction works for one tenant's users, or for one project within it
    (extraction/steering.py): what to remember and never keep, in whose words and under which
    keys and categories. A project's settings add to its tenant's."""

    tenant = models.ForeignKey(
        "memories.Tenant", on_delete=models.CASCADE, related_name="extraction_settings"
    )
    project = models.ForeignKey(
        "memories.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="extraction_settings",
    )
    instructions = models.TextField(blank=True, default="")
    # [{"name": ..., "description": ...}]
    categories = models.JSONField(default=list, blank=True)
    # [{"key": ..., "description": ...}]
    keys = models.JSONField(default=list, blank=True)
    # "": each memory in the language the user wrote; else the language to write them in.
    language = models.CharField(max_length=40, blank=True, default="")
    # Named classes of data never kept (steering.EXCLUSIONS).
    exclude = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "extraction settings"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant"],
                condition=Q(project__isnull=True),
                name="extraction_settings_one_per_tenant",
            ),
            models.UniqueConstraint(
                fields=["project"],
                condition=Q(project__isnull=False),
                name="extraction_settings_one_per_project",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} / {self.project_id or 'tenant'}"
