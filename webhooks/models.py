"""Webhook endpoints of a tenant, the deliveries of each event to them (a transactional
outbox: written in the transaction of the change they report) and every attempt to send one."""

import uuid

from django.db import models

from memories.models import Tenant

# The task that sends one delivery (webhooks.tasks), by name: the services queue it without
# importing the sending code.
DELIVER_TASK = "webhooks.tasks.deliver_webhook_task"


class EventType(models.TextChoices):
    MEMORY_CREATED = "memory.created"
    MEMORY_UPDATED = "memory.updated"
    MEMORY_SUPERSEDED = "memory.superseded"
    MEMORY_DELETED = "memory.deleted"
    MEMORY_APPROVED = "memory.approved"
    MEMORY_REJECTED = "memory.rejected"
    MEMORY_EXPIRED = "memory.expired"
    USER_ERASED = "user.erased"
    EXTRACTION_RUN_FINISHED = "extraction_run.finished"
    PROPOSAL_CREATED = "proposal.created"
    ENTITY_CREATED = "entity.created"
    ENTITY_MERGED = "entity.merged"


class WebhookEndpoint(models.Model):
    """A URL of a tenant's product that receives the events it subscribes to, signed with
    its secret (Standard Webhooks: `whsec_` + base64)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=2000, help_text="http:// or https:// URL.")
    description = models.CharField(max_length=200, blank=True, default="")
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=100, editable=False)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Held while a worker sends to this endpoint (webhooks.delivery): one attempt at a time
    # per endpoint, so a slow receiver holds one delivery worker, never all of them.
    sending_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["created_at"]
        # Every write asks whether an active endpoint exists (webhooks.events).
        indexes = [models.Index(fields=["is_active", "tenant"], name="webhook_endpoint_active")]

    def __str__(self) -> str:
        return self.url

    def save(self, *args, **kwargs) -> None:
        # An edit (the API, the admin) writes every field but the sending hold, which a
        # worker changes meanwhile: the value read before the edit would undo its own.
        editing = not self._state.adding and not kwargs.get("force_insert")
        if editing and kwargs.get("update_fields") is None and not args:
            kwargs["update_fields"] = [
                field.name
                for field in self._meta.concrete_fields
                if not field.primary_key and field.name != "sending_until"
            ]
        super().save(*args, **kwargs)


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    """One event for one endpoint. `message_id` is the `webhook-id` of every attempt (retries
    and replays alike), so a receiver can drop what it has seen. `body` is the JSON sent, kept
    as text so every attempt signs the same bytes. `subject_user_id` names the end user the
    event is about: their erasure deletes these rows (memories.erasure)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_type = models.CharField(max_length=40, choices=EventType.choices)
    message_id = models.CharField(max_length=40, editable=False)
    body = models.TextField(editable=False)
    subject_user_id = models.UUIDField(null=True, blank=True, db_index=True, editable=False)
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    # When the next attempt is due; an attempt under way pushes it past its own timeout (the
    # claim), so a worker that died mid-attempt leaves the delivery due again later.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Failures since it was queued or replayed: picks the next wait in WEBHOOK_RETRY_SECONDS.
    failures = models.PositiveIntegerField(default=0)
    attempt_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
            models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_log"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.message_id}"


class AttemptOutcome(models.TextChoices):
    DELIVERED = "delivered"  # a 2xx answer
    FAILED = "failed"  # another answer
    TIMEOUT = "timeout"
    ERROR = "error"  # no answer: refused connection, TLS, DNS ...
    REFUSED = "refused"  # not sent: the target is a private address (WEBHOOK_ALLOW_PRIVATE)


class WebhookAttempt(models.Model):
    """One try to send a delivery: when, how it ended, how long it took."""

    id = models.BigAutoField(primary_key=True)
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    outcome = models.CharField(max_length=16, choices=AttemptOutcome.choices)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return f"attempt {self.number}: {self.outcome}"
