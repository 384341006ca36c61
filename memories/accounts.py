"""End users: the product's users (by external id) as this service knows them, and their
erasure. Erasure is a hard delete, unlike everything else here: it is what a
user's right to be forgotten asks for."""

from django.contrib.admin.models import LogEntry
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from memories.api_keys import default_tenant, external_user_get_or_create, validate_external_id
from memories.errors import Conflict, Forbidden, InvalidInput, NotFound
from memories.models import (
    ApiKey,
    Memory,
    MemoryEmbedding,
    MemoryRevision,
    Status,
    Tenant,
    User,
)
from memories.recall.index import unindex_memories
from memories.recall.keyword import get_keyword_index
from memories.recall.vector_store import get_vector_store
from memories.selectors import administered_by

ERASE_BATCH = 500


def batched(items: list, size: int):
    """itertools.batched arrived in Python 3.12."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def users_with_counts(*, actor: User) -> QuerySet[User]:
    """The end users staff `actor` administers (never local logins or API key accounts),
    newest first, with their live active and pending memory counts."""
    live = Q(memory__deleted_at__isnull=True)
    return (
        User.objects.filter(administered_by(actor), external_id__isnull=False)
        .annotate(
            active=Count("memory", filter=live & Q(memory__status=Status.ACTIVE)),
            pending=Count("memory", filter=live & Q(memory__status=Status.PENDING_REVIEW)),
        )
        .order_by("-date_joined", "-id")
    )


def user_get(*, user_id, actor: User, field: str = "id") -> User:
    """One end user `actor` administers. Raises NotFound."""
    user = users_with_counts(actor=actor).filter(id=user_id).first()
    if user is None:
        raise NotFound("No user with this id.", field=field)
    return user


def external_user_create(*, external_id: str, tenant: Tenant | None = None) -> User:
    """Create the end user of `tenant` (the default tenant when None) with this external id.
    Raises InvalidInput, Conflict (exists)."""
    tenant = tenant or default_tenant()
    try:
        external_id = validate_external_id(external_id)
    except InvalidInput as error:
        detail = error.detail.replace("X-User-Id", "external_id")
        raise InvalidInput(detail, field="external_id") from None
    if User.objects.filter(tenant=tenant, external_id=external_id).exists():
        raise Conflict("A user with this external_id exists already.", field="external_id")
    user, created = external_user_get_or_create(
        external_id=external_id, provision=True, tenant=tenant
    )
    if not created:  # created by a concurrent request meanwhile
        raise Conflict("A user with this external_id exists already.", field="external_id")
    return user


def user_erase(*, user: User) -> None:
    """Hard-delete the user and every row about them, in one transaction: memories with
    their vectors, keyword rows and revisions, projects, topics, messages, work sessions,
    extraction state and runs, tokens, sessions and admin log entries. Raises Forbidden for
    an API key's account (revoke the key instead)."""
    if ApiKey.objects.filter(account=user).exists():
        raise Forbidden("This is an API key's account: revoke the key instead.", field="id")
    if user.is_staff or user.is_superuser:
        raise Forbidden(
            "Staff and superuser accounts are not erased through the API; use the admin.",
            field="id",
        )
    with transaction.atomic():
        memory_ids = list(Memory.objects.filter(user=user).values_list("id", flat=True))
        # Rows without a foreign key to the user: the vector and keyword index tables.
        for chunk in batched(memory_ids, ERASE_BATCH):
            unindex_memories(chunk)
        if memory_ids:
            get_keyword_index().purge_deleted()
            get_vector_store().forget(memory_ids=memory_ids)
        MemoryRevision.objects.filter(memory__user=user).delete()
        MemoryEmbedding.objects.filter(memory__user=user).delete()
        Memory.objects.filter(supersedes__user=user).update(supersedes=None)
        # In batches: deleting through the ORM loads the rows it deletes.
        for chunk in batched(memory_ids, ERASE_BATCH):
            Memory.objects.filter(id__in=chunk).delete()
        _erase_sessions(user)
        LogEntry.objects.filter(object_id=str(user.id), content_type__model="user").delete()
        # The rest hangs on the user by cascading foreign keys (projects, topics and their
        # messages, work sessions, extraction state and runs, tokens, admin log entries).
        user.delete()


def _erase_sessions(user: User) -> None:
    """Browser sessions of the user: their data is encoded, so each live one is read."""
    user_id = str(user.id)
    stale = [
        session.session_key
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if session.get_decoded().get("_auth_user_id") == user_id
    ]
    Session.objects.filter(session_key__in=stale).delete()


def self_erase(*, user: User, confirm: str) -> None:
    """Erase the caller, who confirms with their username (or their external id).
    Raises InvalidInput (confirmation), Forbidden (an API key's account)."""
    if confirm not in {user.username, user.external_id}:
        raise InvalidInput(
            "Send your username (or external id) as confirm to erase all your data.",
            field="confirm",
        )
    user_erase(user=user)
