"""What a user's profile holds, read (never written) from their current memories and entities.

A profile is about the user themselves: it reads the memories of the user's own scope
(scope "user"), not those of their topics, projects or personas, which belong to one
conversation or product and not to who the user is."""

import hashlib
from dataclasses import dataclass
from itertools import groupby

from django.conf import settings
from django.db.models import Count, Max, Q, QuerySet

from memories.models import Entity, Memory, Profile, Scope, Status, User

# Current: active, not deleted, not replaced; as the hint reads pinned memories.
CURRENT = Q(status=Status.ACTIVE, valid_until__isnull=True, deleted_at__isnull=True)
CURRENT_LINKED = Q(
    memories__status=Status.ACTIVE,
    memories__valid_until__isnull=True,
    memories__deleted_at__isnull=True,
)


def own_memories(user_id) -> QuerySet[Memory]:
    return Memory.objects.filter(user_id=user_id, scope=Scope.USER)


def profile_fingerprint(user_id) -> str:
    """A name for the state of everything a profile reads: it changes when a current memory
    of the user's scope or one of their entities is saved (each save moves its updated_at),
    created, deleted or restored, and when a memory stops being current (the count). Two
    aggregate queries, the first read from the memory_profile_current index alone."""
    memories = (
        own_memories(user_id)
        .filter(CURRENT)
        .aggregate(latest=Max("updated_at"), current=Count("id"))
    )
    entities = Entity.objects.filter(user_id=user_id).aggregate(
        latest=Max("updated_at"), count=Count("id")
    )
    state = "|".join(
        str(part)
        for part in (
            memories["latest"] and memories["latest"].isoformat(),
            memories["current"],
            entities["latest"] and entities["latest"].isoformat(),
            entities["count"],
        )
    )
    return hashlib.sha256(state.encode()).hexdigest()


@dataclass
class ProfileContents:
    """The pinned current memories; the other current ones, most important first (at most
    PROFILE_MEMORIES_MAX); how many current ones there are besides the pinned; the entities
    that have current memories, by relation; the fingerprint of all of it; and the summary
    written last (None before the first)."""

    user: User
    pinned: list[Memory]
    memories: list[Memory]
    memory_count: int
    entities: list[Entity]
    fingerprint: str
    saved: Profile | None

    @property
    def summary_stale(self) -> bool:
        """Whether memories or entities changed since the summary was written (the next
        sweep writes it again)."""
        return self.saved is None or self.saved.fingerprint != self.fingerprint

    @property
    def truncated(self) -> bool:
        return len(self.memories) < self.memory_count

    def by_category(self) -> list[tuple[str, list[Memory]]]:
        """The listed memories grouped by category (named ones in name order, then the
        memories without one), each group most important first."""
        ordered = sorted(self.memories, key=lambda memory: (memory.category == "", memory.category))
        return [
            (category, list(group)) for category, group in groupby(ordered, lambda m: m.category)
        ]

    def by_relation(self) -> list[tuple[str, list[Entity]]]:
        """The entities grouped by relation (named ones in name order, then those without)."""
        ordered = sorted(
            self.entities,
            key=lambda entity: (
                entity.relation == "",
                entity.relation.lower(),
                entity.name.lower(),
            ),
        )
        return [
            (relation, list(group))
            for relation, group in groupby(ordered, lambda entity: entity.relation.lower())
        ]

    def summary_sources(self) -> list[Memory]:
        """The memories a summary is written from: the pinned ones, then the most important
        others, at most PROFILE_SUMMARY_MEMORIES in all but every pinned one."""
        room = max(0, settings.PROFILE_SUMMARY_MEMORIES - len(self.pinned))
        return [*self.pinned, *self.memories[:room]]


def profile_contents(
    user: User, *, listed: int | None = None, fingerprint: str | None = None
) -> ProfileContents:
    """Read the profile of `user`, with at most `listed` (PROFILE_MEMORIES_MAX) memories
    besides the pinned ones. The fingerprint is read first (or given, read before): should a
    memory change while the rest is read, the profile is taken for older than it is and
    written again."""
    fingerprint = fingerprint or profile_fingerprint(user.id)
    listed = settings.PROFILE_MEMORIES_MAX if listed is None else listed
    current = own_memories(user.id).filter(CURRENT)
    order = ("-importance", "-updated_at", "id")
    pinned = list(current.filter(pinned=True).order_by(*order))
    others = current.filter(pinned=False)
    memories = list(others.order_by(*order)[:listed])
    count = len(memories)
    if count == listed:
        # All current ones less the pinned, counted in the index (the unpinned ones would be
        # counted from the rows: pinned is not in it).
        count = current.count() - len(pinned)
    entities: list[Entity] = list(
        Entity.objects.filter(user=user)
        .annotate(current_memories=Count("memories", filter=CURRENT_LINKED))
        .filter(current_memories__gt=0)
        .order_by("relation", "name", "id")
    )
    return ProfileContents(
        user=user,
        pinned=pinned,
        memories=memories,
        memory_count=count,
        entities=entities,
        fingerprint=fingerprint,
        saved=Profile.objects.filter(user=user).first(),
    )
