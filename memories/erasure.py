"""Erasure of a user: a hard delete of every row about them, unlike everything else here (it
is what a user's right to be forgotten asks for).

Done in short transactions so that no other user's request waits long for it (on SQLite one
transaction holds the only write lock; erasing 60,000 memories at once held it for 23 s, and
other users' writes failed with "database is locked"):
1. erasure_hide, one transaction: the user can no longer sign in or act (is_active off, tokens
   gone), is listed nowhere, and their username and external id are moved aside, so the same
   X-User-Id names a fresh user from now on. erasure_started_at marks the erasure as pending.
2. erasure_memory_batch, repeated: ERASE_BATCH memories with their vectors, keyword rows,
   embedding rows and revisions, one transaction each.
3. erasure_complete: the user's conversation messages in batches, the keyword index's
   leftovers (SQLite's full-text index merged a step at a time), each in short transactions;
   then one transaction: whatever a request of the user still in flight wrote meanwhile,
   browser sessions, admin log entries and the user row with everything that cascades from
   it (projects, topics, work sessions, extraction state and runs, consolidation proposals).
Between two transactions of steps 2 and 3 the erasure gives way to other writers on SQLite
(memories/write_turns.py).
Every step can be repeated; an erasure a crash stopped half-way is finished by calling
user_erase again (DELETE /api/users/{id} finds the hidden user) or by erasures_finish
(manage.py finish_erasures, and Celery beat every ERASURE_FINISH_INTERVAL_SECONDS)."""

import time
from datetime import timedelta
from uuid import UUID

from axes.models import AccessAttempt
from django.contrib.admin.models import LogEntry
from django.contrib.sessions.models import Session
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from memories.errors import Forbidden
from memories.models import ApiKey, Memory, MemoryRevision, Message, User, WorkSessionMessage
from memories.recall.index import unindex_memories
from memories.recall.keyword import get_keyword_index
from memories.recall.vector_store import get_vector_store
from memories.write_turns import give_way
from webhooks.events import deliveries_of_user_drop, user_erased

# Memories per transaction. On SQLite 100 hold the write lock for 30-40 ms on the project's
# slow 2-core machine (~0.3 ms a memory, mostly the keyword postings, FTS5 and vec0 rows), so
# a write of another user waits about that long for a batch, never seconds. PostgreSQL locks
# the rows it deletes, not the database: larger batches there only save time (50,000
# memories in ~30 s by 100, ~20 s by 1,000).
ERASE_BATCH = {"sqlite": 100, "postgresql": 1000}
# Messages per transaction (no index rows: deleting one is cheap).
ERASE_MESSAGE_BATCH = {"sqlite": 1000, "postgresql": 5000}
# Steps of the keyword index's purge (each merges FTS_MERGE_PAGES pages) before the rest is
# done in one transaction.
PURGE_MAX_STEPS = 10_000
# Celery beat finishes erasures started at least this long ago: younger ones are most likely
# still under way in the request that started them (running both is harmless, only wasted).
ERASURE_RESUME_AFTER = timedelta(minutes=10)


def user_erase(*, user: User) -> None:
    """Hide the user at once, then delete every row about them in short transactions (see
    the module's docstring); finishes an erasure that was stopped half-way. Raises Forbidden
    for an API key's account (revoke the key instead) and for staff and superusers."""
    if ApiKey.objects.filter(account=user).exists():
        raise Forbidden("This is an API key's account: revoke the key instead.", field="id")
    if user.is_staff or user.is_superuser:
        raise Forbidden(
            "Staff and superuser accounts are not erased through the API; use the admin.",
            field="id",
        )
    erasure_hide(user_id=user.id)
    erasure_finish(user_id=user.id)


@transaction.atomic
def erasure_hide(*, user_id: UUID) -> None:
    """Step 1: the user cannot sign in, act or be found any more, and their external id and
    username are free for someone new. Idempotent."""
    # The username (which may be the external id, or a person's name) goes now too: the
    # row lives on until the last step, and the name should be free at once. So do the
    # failed logins django-axes counts under it (they hold no foreign key to the user).
    row = User.objects.filter(id=user_id).values_list("username", "external_id").first()
    username, external_id = row or (None, None)
    if username and username != _hidden_username(user_id):
        AccessAttempt.objects.filter(username=username).delete()
    User.objects.filter(id=user_id).update(
        is_active=False,
        external_id=None,
        username=_hidden_username(user_id),
        email="",
        first_name="",
        last_name="",
    )
    started = User.objects.filter(id=user_id, erasure_started_at__isnull=True).update(
        erasure_started_at=timezone.now()
    )
    Token.objects.filter(user_id=user_id).delete()
    # Webhook deliveries of events about the user hold their memories; user.erased, sent
    # once (by the call that started the erasure), holds their ids only.
    deliveries_of_user_drop(user_id=user_id)
    if started:
        user_erased(user_id=user_id, external_id=external_id)


def _hidden_username(user_id: UUID) -> str:
    return f"erasing-{user_id.hex}"


def erasure_memory_batch(*, user_id: UUID, size: int | None = None) -> int:
    """Step 2, once: delete up to `size` (ERASE_BATCH) memories of the user with their
    vectors, keyword rows, embedding rows and revisions, in one transaction. Returns how many
    (0: none left)."""
    size = size or ERASE_BATCH[connection.vendor]
    # Read before the transaction: on SQLite a transaction holds the write lock from its
    # first statement (IMMEDIATE), reads included. Another runner finishing the same erasure
    # may delete some of these meanwhile; deleting them again deletes nothing.
    memory_ids = list(Memory.objects.filter(user_id=user_id).values_list("id", flat=True)[:size])
    if not memory_ids:
        return 0
    locked_seconds = _erase_memories(memory_ids, last=False)
    give_way(locked_seconds)
    return len(memory_ids)


@transaction.atomic
def _erase_memories(memory_ids: list[UUID], *, last: bool) -> float:
    """Returns how long it held the transaction (on SQLite, the write lock) in seconds."""
    started = time.monotonic()
    # Rows without a foreign key to the memory: the vector and keyword index tables.
    unindex_memories(memory_ids)
    get_vector_store().forget(memory_ids=memory_ids, last=last)
    MemoryRevision.objects.filter(memory_id__in=memory_ids).delete()
    # Cascades (embedding rows, proposals' links) and nulls other memories' links to these.
    Memory.objects.filter(id__in=memory_ids).delete()
    return time.monotonic() - started


def erasure_complete(*, user_id: UUID) -> None:
    """Step 3: everything else, and the user row. Idempotent. What may be large goes first
    in short transactions of its own (the user's conversation messages; the full-text
    index's merge, which rewrites every user's part of it on SQLite), so that the last
    transaction only deletes the user row and what little is left."""
    session_keys = _session_keys_of(user_id)  # read outside: it decodes every live session
    _erase_messages(user_id)
    # FTS5 keeps deleted words in its segments until they are merged (erasure only).
    _purge_keyword_index()
    with transaction.atomic():
        # A request of the user authenticated before step 1 may have written since.
        leftovers = list(Memory.objects.filter(user_id=user_id).values_list("id", flat=True))
        _erase_memories(leftovers, last=True)
        if leftovers:
            # Rare (a write in flight since step 1): their words are purged in this
            # transaction, whatever it takes, so that none survives the user row.
            first = True
            while get_keyword_index().purge_deleted(first=first):
                first = False
        Session.objects.filter(session_key__in=session_keys).delete()
        LogEntry.objects.filter(object_id=str(user_id), content_type__model="user").delete()
        # Events of a request still in flight since step 1 (memory events are dropped).
        deliveries_of_user_drop(user_id=user_id)
        # The rest hangs on the user by cascading foreign keys (projects, topics and their
        # messages, work sessions, extraction state and runs, proposals, admin log entries).
        User.objects.filter(id=user_id).delete()


def _erase_messages(user_id: UUID) -> None:
    """The messages of the user's topics and work sessions, ERASE_MESSAGE_BATCH per
    transaction (a long conversation history would otherwise go in the last one)."""
    size = ERASE_MESSAGE_BATCH[connection.vendor]
    for model, owner in ((Message, "topic__user_id"), (WorkSessionMessage, "session__user_id")):
        while True:
            ids = list(model.objects.filter(**{owner: user_id}).values_list("id", flat=True)[:size])
            if not ids:
                break
            started = time.monotonic()
            model.objects.filter(id__in=ids).delete()
            give_way(time.monotonic() - started)


def _purge_keyword_index() -> None:
    """The keyword index's purge of deleted rows, one short transaction per step."""
    index = get_keyword_index()
    for step in range(PURGE_MAX_STEPS):
        started = time.monotonic()
        with transaction.atomic():
            more = index.purge_deleted(first=step == 0)
        give_way(time.monotonic() - started)
        if not more:
            return
    # Writes of other users kept adding to the index as fast as it merged: the last
    # transaction purges what is left in one go (as every erasure used to).
    with transaction.atomic():
        while index.purge_deleted(first=False):
            pass


def erasure_finish(*, user_id: UUID) -> None:
    """Steps 2 and 3 for a hidden user (step 1 done)."""
    while erasure_memory_batch(user_id=user_id):
        pass
    erasure_complete(user_id=user_id)


def erasures_pending(*, started_before: timedelta | None = None) -> list[UUID]:
    """Ids of hidden users whose erasure has not finished, oldest first; with
    `started_before`, only those started at least that long ago."""
    pending = User.objects.filter(erasure_started_at__isnull=False)
    if started_before is not None:
        pending = pending.filter(erasure_started_at__lte=timezone.now() - started_before)
    return list(pending.order_by("erasure_started_at").values_list("id", flat=True))


def erasures_finish(*, started_before: timedelta | None = None) -> int:
    """Finish every pending erasure (a crash stopped them). Returns how many."""
    pending = erasures_pending(started_before=started_before)
    for user_id in pending:
        erasure_finish(user_id=user_id)
    return len(pending)


def _session_keys_of(user_id: UUID) -> list[str]:
    """Browser sessions of the user: their data is encoded, so each live one is read."""
    wanted = str(user_id)
    return [
        session.session_key
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if session.get_decoded().get("_auth_user_id") == wanted
    ]
