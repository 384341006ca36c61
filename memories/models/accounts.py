"""Tenants, people and the keys products call with."""

import uuid

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q

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
