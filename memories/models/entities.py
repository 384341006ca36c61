"""Entities: the people, pets, places, organisations and other things an end user's memories
are about, with their relation to the user and the memories that mention them."""

import uuid

from django.conf import settings
from django.db import models

from memories.models.memory import Memory


class EntityKind(models.TextChoices):
    PERSON = "person"
    PET = "pet"
    PLACE = "place"
    ORGANISATION = "organisation"
    OTHER = "other"


class Entity(models.Model):
    """One thing of the user's life. `names_folded` holds the name and every alias as
    linking compares them (memories.entities.names.fold), so a mention finds it without
    folding every row again."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="entities"
    )
    kind = models.CharField(max_length=16, choices=EntityKind.choices, default=EntityKind.OTHER)
    # What it is to the user: "wife", "son", "dog", "employer", "home town"; "" when unknown.
    relation = models.CharField(max_length=100, blank=True)
    name = models.CharField(max_length=200)
    aliases = models.JSONField(default=list, blank=True)
    names_folded = models.JSONField(default=list, blank=True, editable=False)
    memories = models.ManyToManyField(Memory, related_name="entities", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "entities"
        indexes = [
            models.Index(fields=["user", "relation"]),
            # What changed since the last profile sweep (memories.profiles.sweep).
            models.Index(fields=["updated_at"], name="entity_updated_at"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.relation or self.kind})"
