"""End users: the product's users (by external id) as this service knows them, and who may
erase them (the erasure itself: memories.erasure)."""

from django.db.models import Count, Q, QuerySet

from memories.accounts.keys import external_user_get_or_create, validate_external_id
from memories.accounts.tenants import default_tenant
from memories.erasure import user_erase
from memories.errors import Conflict, InvalidInput, NotFound
from memories.models import Status, Tenant, User
from memories.selectors import administered_by


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


def erasable_user_get(*, user_id, actor: User, field: str = "id") -> User:
    """The user `actor` may erase: one they administer, or a hidden one of their tenant whose
    erasure has started (a repeated DELETE finishes it). Raises NotFound."""
    user = users_with_counts(actor=actor).filter(id=user_id).first()
    if user is None:
        # A hidden user has no external id any more; their tenant says who administers them.
        tenant = Q() if actor.tenant_id is None else Q(tenant_id=actor.tenant_id)
        user = User.objects.filter(tenant, id=user_id, erasure_started_at__isnull=False).first()
    if user is None:
        raise NotFound("No user with this id.", field=field)
    return user


def self_erase(*, user: User, confirm: str) -> None:
    """Erase the caller, who confirms with their username (or their external id).
    Raises InvalidInput (confirmation), Forbidden (an API key's account)."""
    if confirm not in {user.username, user.external_id}:
        raise InvalidInput(
            "Send your username (or external id) as confirm to erase all your data.",
            field="confirm",
        )
    user_erase(user=user)
