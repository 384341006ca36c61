"""Retention rules: how long a tenant keeps its memories, by scope and category."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from memories.models.accounts import Tenant
from memories.models.carriers import Project
from memories.models.memory import Scope


class RetentionRule(models.Model):
    """A time to live: the memories of `tenant` (of one `project` only, when set) of `scope`
    and `category` (blank: any) expire `days` after they became current (valid_from). The
    shortest rule matching a memory decides (memories.retention)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="retention_rules")
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="retention_rules",
        help_text="Only this project's memories (its own and its conversations'); blank: all.",
    )
    scope = models.CharField(
        max_length=16, choices=Scope.choices, blank=True, help_text="Blank: any scope."
    )
    category = models.CharField(
        max_length=settings.MEMORY_CATEGORY_MAX_LENGTH,
        blank=True,
        help_text="The memories of exactly this category; blank: any category.",
    )
    days = models.PositiveIntegerField(help_text="How many days a memory stays current.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(days__gte=1), name="retention_rule_days_positive"),
            # One rule per project (or the whole tenant), scope and category: two would only
            # say the shorter one. Two conditions, as NULLs are distinct in a unique index.
            models.UniqueConstraint(
                fields=["tenant", "scope", "category"],
                condition=Q(project__isnull=True),
                name="retention_rule_tenant_once",
            ),
            models.UniqueConstraint(
                fields=["tenant", "project", "scope", "category"],
                condition=Q(project__isnull=False),
                name="retention_rule_project_once",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.describe()}: {self.days} days"

    def describe(self) -> str:
        """Which memories it is for, in words: "session memories of category travel"."""
        what = f"{self.scope} memories" if self.scope else "memories"
        if self.category:
            what += f" of category {self.category}"
        if self.project_id:
            what += f" in project {self.project_id}"
        return what
