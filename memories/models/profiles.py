"""Profiles: the short summary of who an end user is, written in the background from their
memories and entities (memories.profiles), with what it was written from."""

from django.conf import settings
from django.db import models


class SummaryWriter(models.TextChoices):
    TEMPLATE = "template"
    LLM = "llm"


class Profile(models.Model):
    """One per end user, made the first time their memories change. `fingerprint` names the
    current memories and entities the summary was written from (memories.profiles.contents),
    so a rewrite that would read the same is skipped, and a read can tell a stale summary."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="profile",
    )
    summary = models.TextField(blank=True)
    written_by = models.CharField(max_length=16, choices=SummaryWriter.choices)
    made_at = models.DateTimeField()
    fingerprint = models.CharField(max_length=64)
    # [{"id", "updated_at"}] of the memories the summary was written from.
    memories_read = models.JSONField(default=list, blank=True)
    # Why the LLM did not write it (the template did), "" when nothing failed.
    error = models.CharField(max_length=300, blank=True)

    def __str__(self) -> str:
        return f"profile of {self.user_id}"
