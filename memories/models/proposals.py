"""Consolidation proposals: merges and archivals staff decide on."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from memories.models.memory import Memory


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
