"""Find the users whose memories or entities changed and write their profile summaries (the
periodic task, every PROFILE_REFRESH_INTERVAL_SECONDS).

A change is found by its updated_at (indexed): every save of a memory or an entity moves it,
so no write path has to remember to ask for a summary, and a save costs nothing more. A
change is looked at twice: by the first sweep after the last one started (the new changes),
and once more when it is overlap() old, the last sweep whose window holds it. A transaction
that committed after a sweep read, with an updated_at before that sweep, is seen by the
second look, since no write transaction lasts as long as the overlap. A user found twice is
written once, for profile_write skips a summary that read the same (its fingerprint: an
aggregate over the user's memories, some 50 ms on PostgreSQL for a user of 100,000, which the
sweeps of the overlap read every time before: five times per change in the default).

A user whose summary is younger than PROFILE_REFRESH_MIN_SECONDS is left for a later sweep;
the overlap is longer than that wait, so the second look still finds their change."""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from memories.models import ConfigEntry, Entity, Memory, Profile, Scope, User
from memories.profiles.writing import profile_write

SWEPT_FROM_KEY = "profiles_swept_from"
# Longer than any write transaction: one that started before a sweep and committed after it
# is read by the next.
PROFILE_REFRESH_OVERLAP = timedelta(minutes=2)
USERS_PER_READ = 500


def overlap() -> timedelta:
    """How far before the last sweep's start this one reads: PROFILE_REFRESH_OVERLAP, or
    longer than a user's wait (PROFILE_REFRESH_MIN_SECONDS) and two sweeps, so a change made
    while the user waited is still found when the wait is over."""
    waited = settings.PROFILE_REFRESH_MIN_SECONDS + 2 * settings.PROFILE_REFRESH_INTERVAL_SECONDS
    return max(PROFILE_REFRESH_OVERLAP, timedelta(seconds=waited))


def changed_user_ids(since, until=None) -> set:
    """The users with a memory of their own scope or an entity saved after `since` (every
    user with one, without `since`) and, with `until`, not after it."""
    memories = Memory.objects.filter(scope=Scope.USER, user__isnull=False)
    entities = Entity.objects.all()
    if since is not None:
        memories = memories.filter(updated_at__gt=since)
        entities = entities.filter(updated_at__gt=since)
    if until is not None:
        memories = memories.filter(updated_at__lte=until)
        entities = entities.filter(updated_at__lte=until)
    return set(memories.values_list("user_id", flat=True).distinct()) | set(
        entities.values_list("user_id", flat=True).distinct()
    )


def users_to_look_at(last_started: datetime | None, started: datetime) -> set:
    """The users whose changes this sweep looks at: every user on the first sweep; then those
    changed since the last sweep started, and those whose changes leave the window now (saved
    between overlap() before the last sweep's start and overlap() before this one's)."""
    if last_started is None:
        return changed_user_ids(None)
    window = overlap()
    return changed_user_ids(last_started) | changed_user_ids(
        last_started - window, started - window
    )


def profiles_refresh() -> dict:
    """Write the summary of every user changed since the last sweep, or whose changes leave
    the overlap now (users_to_look_at; on the first sweep, of every user with memories).
    Returns {"written": summaries written}: a run that wrote none is left out of the log
    (ops.logs.IdlePeriodicTaskFilter), though it may have looked again at some users."""
    started = timezone.now()
    entry = ConfigEntry.objects.filter(key=SWEPT_FROM_KEY).first()
    last_started = datetime.fromisoformat(entry.value) if entry is not None else None
    user_ids = sorted(users_to_look_at(last_started, started))
    written_after = started - timedelta(seconds=settings.PROFILE_REFRESH_MIN_SECONDS)
    written = 0
    for start in range(0, len(user_ids), USERS_PER_READ):
        batch = user_ids[start : start + USERS_PER_READ]
        waiting = set(
            Profile.objects.filter(user_id__in=batch, made_at__gt=written_after).values_list(
                "user_id", flat=True
            )
        )
        # Users in erasure are left alone: the erasure deletes their profile with them.
        users = User.objects.filter(
            id__in=[user_id for user_id in batch if user_id not in waiting],
            erasure_started_at__isnull=True,
        )
        for user in users.order_by("id"):
            written += profile_write(user)
    ConfigEntry.objects.update_or_create(
        key=SWEPT_FROM_KEY, defaults={"value": started.isoformat()}
    )
    return {"written": written}
