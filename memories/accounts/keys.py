"""Service keys and the end users they act for.

A product backend holds one key and names, per request, the end user it acts for
(`X-User-Id: <its own id for that user>`); that user is created here on first use. The REST
API (memories.accounts.authentication) and the MCP server over HTTP both authenticate through
`principal_for`, so the two cannot disagree on who a request is.
"""

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.authtoken.models import Token

from memories.accounts.tenants import default_tenant
from memories.errors import InvalidInput, NotFound, ServiceError
from memories.models import DEFAULT_TENANT_SLUG, ApiKey, ApiKeyScope, Tenant, User
from memories.rows import columns, reader

KEY_PREFIX = "mem_"
EXTERNAL_ID_MAX_LENGTH = 255
# last_used_at is written at most once a minute per key: a write on every request would
# cost every read its own UPDATE (and on SQLite, the write lock).
LAST_USED_RESOLUTION = timedelta(minutes=1)


class Unauthenticated(ServiceError):
    status_code = 401
    code = "not_authenticated"


@dataclass(frozen=True)
class Principal:
    """Who a request is: the user it acts as and, for a key, the key and its scopes.
    `key` is None for a user's own token or session (every scope)."""

    user: User
    key: ApiKey | None = None

    @property
    def scopes(self) -> frozenset[str]:
        if self.key is None:
            return frozenset(ApiKeyScope.values)
        return frozenset(self.key.scopes)

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


def _hash(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def parse_scopes(scopes: Iterable[str]) -> list[str]:
    """Known scopes, deduplicated in a fixed order. Raises InvalidInput naming `scopes`."""
    given = [scope.strip() for scope in scopes if scope.strip()]
    unknown = sorted(set(given) - set(ApiKeyScope.values))
    if unknown:
        raise InvalidInput(
            f"Unknown scope {unknown[0]!r}; use read, write and/or review.", field="scopes"
        )
    if not given:
        raise InvalidInput("Give at least one scope: read, write or review.", field="scopes")
    return [scope for scope in ApiKeyScope.values if scope in given]


@transaction.atomic
def api_key_create(
    *,
    name: str,
    scopes: Iterable[str],
    created_by: User | None = None,
    tenant: Tenant | None = None,
) -> tuple[ApiKey, str]:
    """Create a key of `tenant` (the default tenant when None) and its account; returns the
    key and the secret, which is not stored and cannot be shown again. Raises InvalidInput
    (name, scopes)."""
    name = name.strip()
    if not name or len(name) > 100:
        raise InvalidInput("A name of 1 to 100 characters.", field="name")
    scopes = parse_scopes(scopes)
    tenant = tenant or default_tenant()
    raw_key = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        name=name, scopes=scopes, created_by=created_by, prefix=raw_key[:12], tenant=tenant
    )
    key.key_hash = _hash(raw_key)
    # The account's staff rights (review scope) reach its tenant's end users only.
    account = User(
        username=f"apikey-{key.id.hex[:16]}",
        is_staff=ApiKeyScope.REVIEW in scopes,
        first_name=name[:150],
        tenant=tenant,
    )
    account.set_unusable_password()
    account.save()
    key.account = account
    key.save(force_insert=True)
    return key, raw_key


def api_key_revoke(*, key: ApiKey) -> bool:
    """Revoke a key for good; False when it was revoked already."""
    return bool(
        ApiKey.objects.filter(id=key.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
    )


def api_key_set_scopes(*, key: ApiKey, scopes: Iterable[str]) -> ApiKey:
    """Change a key's scopes; its account is staff exactly when it has the review scope."""
    key.scopes = parse_scopes(scopes)
    with transaction.atomic():
        key.save(update_fields=["scopes"])
        User.objects.filter(id=key.account_id).update(is_staff=ApiKeyScope.REVIEW in key.scopes)
    return key


# The place of the user's id among its columns (memories.rows.columns).
_USER_ID_AT = User._meta.concrete_fields.index(User._meta.pk)


def _key_for(raw_key: str, *, external_id: str | None = None) -> tuple[ApiKey, User | None]:
    """The key with its tenant and, when an external id is given, that tenant's user of that
    id (None when there is none), in one hand-written statement: every request starts here,
    and the ORM took longer to build this query than the database to answer it. The key's
    own account is read only when the key acts as itself (a lazy second query)."""
    quote = connection.ops.quote_name
    keys, tenants, users = (quote(m._meta.db_table) for m in (ApiKey, Tenant, User))
    key_tenant = quote(ApiKey._meta.get_field("tenant").column)
    user_tenant = quote(User._meta.get_field("tenant").column)
    selected = f"{columns(ApiKey, 'k')}, {columns(Tenant, 't')}"
    joined = f"{keys} k JOIN {tenants} t ON t.id = k.{key_tenant}"
    params = []
    if external_id is not None:
        selected += f", {columns(User, 'u')}"
        joined += f" LEFT JOIN {users} u ON u.{user_tenant} = t.id AND u.external_id = %s"
        params.append(external_id)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {selected} FROM {joined} WHERE k.key_hash = %s", [*params, _hash(raw_key)]
        )
        row = cursor.fetchone()
    if row is None:
        raise Unauthenticated("Unknown API key.")
    tenant_starts = len(reader(ApiKey))
    user_starts = tenant_starts + len(reader(Tenant))
    key = reader(ApiKey).read(row[:tenant_starts])
    key.tenant = reader(Tenant).read(row[tenant_starts:user_starts])
    end_user = None
    user_values = row[user_starts:]
    # The LEFT JOIN found no user when the user's columns, its id among them, are NULL.
    if user_values and user_values[_USER_ID_AT] is not None:
        end_user = reader(User).read(user_values)
        end_user.tenant = key.tenant
    if key.is_revoked:
        raise Unauthenticated("This API key was revoked.")
    now = timezone.now()
    if key.last_used_at is None or key.last_used_at < now - LAST_USED_RESOLUTION:
        # Conditional: of several requests in the same minute, one writes.
        ApiKey.objects.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION),
            id=key.id,
        ).update(last_used_at=now)
    return key, end_user


def validate_external_id(raw: str) -> str:
    """1-255 printable characters. Raises InvalidInput naming X-User-Id."""
    if not raw or len(raw) > EXTERNAL_ID_MAX_LENGTH or not raw.isprintable():
        raise InvalidInput(
            f"X-User-Id must be 1 to {EXTERNAL_ID_MAX_LENGTH} printable characters.",
            field="X-User-Id",
        )
    return raw


def _valid_or_none(external_id: str | None) -> str | None:
    try:
        return validate_external_id(external_id or "")
    except InvalidInput:
        return None


def _username_for(external_id: str, tenant: Tenant) -> str:
    # Usernames are unique across tenants; the default tenant's keep their old form.
    name = external_id if tenant.slug == DEFAULT_TENANT_SLUG else f"{tenant.slug}:{external_id}"
    if len(name) <= 140:
        return f"ext-{name}"
    return f"ext-{hashlib.sha256(name.encode()).hexdigest()[:40]}"


def external_user_get_or_create(
    *, external_id: str, provision: bool, tenant: Tenant | None = None
) -> tuple[User, bool]:
    """The user of `tenant` (the default tenant when None) with this external id, created
    when `provision` and missing. Returns (user, created). Raises InvalidInput (a malformed
    id), NotFound (missing, no provisioning)."""
    external_id = validate_external_id(external_id)
    tenant = tenant or default_tenant()
    user = User.objects.filter(tenant=tenant, external_id=external_id).first()
    if user is not None:
        return user, False
    if not provision:
        raise NotFound(
            "No user with this external id; create it with POST /api/users first "
            "(AUTO_PROVISION_USERS is off).",
            field="X-User-Id",
        )
    for username in (_username_for(external_id, tenant), f"ext-{secrets.token_hex(16)}"):
        try:
            with transaction.atomic():
                user = User(username=username, external_id=external_id, tenant=tenant)
                user.set_unusable_password()
                user.save(force_insert=True)
                return user, True
        except IntegrityError:
            # Another request created the same external user first (take theirs), or a
            # local login already has this username (try a random one).
            existing = User.objects.filter(tenant=tenant, external_id=external_id).first()
            if existing is not None:
                return existing, False
    raise InvalidInput("Could not create a user for this external id.", field="X-User-Id")


def unsaved_end_user(*, external_id: str, tenant: Tenant) -> User:
    """The end user a read of an unknown external id acts as: never saved, so it owns no row
    and no data; its (random) id lets queries filter by it and find nothing. A write creates
    the real user (external_user_get_or_create)."""
    return User(username=_username_for(external_id, tenant), external_id=external_id, tenant=tenant)


def principal_writing(principal: Principal) -> Principal:
    """The principal a write acts as: a read's unsaved end user (principal_for with
    creates_user=False) becomes the real one, created now."""
    user = principal.user
    if not user._state.adding or user.external_id is None:
        return principal
    saved, _ = external_user_get_or_create(
        external_id=user.external_id, provision=True, tenant=user.tenant
    )
    return replace(principal, user=saved)


def principal_for(
    *,
    authorization: str | None,
    external_id: str | None,
    key_acts_as_itself: bool = False,
    creates_user: bool = True,
) -> Principal | None:
    """Who a request with these headers is. `Bearer <key>` with `X-User-Id` acts as that end
    user; a key with the review scope and no X-User-Id acts as its own (staff) account, as do
    all keys on endpoints that act for no end user (`key_acts_as_itself`). `Token <token>` is
    a user's own token. A request that only reads (`creates_user` False) never creates the
    end user: an unknown one is acted as unsaved, a user with no data (see unsaved_end_user).
    None when the header is neither. Raises Unauthenticated (unknown or
    revoked key or token), InvalidInput (X-User-Id missing or malformed), NotFound."""
    scheme, _, credential = (authorization or "").strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() == "token" and credential:
        token = Token.objects.select_related("user").filter(key=credential).first()
        if token is None or not token.user.is_active:
            raise Unauthenticated("Invalid token.")
        return Principal(user=token.user)
    if scheme.lower() != "bearer":
        return None
    if not credential:
        raise Unauthenticated("Give the API key after 'Bearer '.")
    acts_for = None if key_acts_as_itself else _valid_or_none(external_id)
    key, end_user = _key_for(credential, external_id=acts_for)
    if key_acts_as_itself:
        return Principal(user=key.account, key=key)
    if external_id is None or external_id == "":
        if key.has_scope(ApiKeyScope.REVIEW):
            return Principal(user=key.account, key=key)
        raise InvalidInput(
            "An API key needs X-User-Id: the external id of the end user this request acts for.",
            field="X-User-Id",
        )
    external_id = validate_external_id(external_id)
    if end_user is not None:
        user = end_user
    elif not creates_user and settings.AUTO_PROVISION_USERS:
        user = unsaved_end_user(external_id=external_id, tenant=key.tenant)
    else:
        user, _ = external_user_get_or_create(
            external_id=external_id, provision=settings.AUTO_PROVISION_USERS, tenant=key.tenant
        )
    if not user.is_active:
        raise Unauthenticated("This user is deactivated.")
    return Principal(user=user, key=key)
