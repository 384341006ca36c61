"""Webhook endpoints and their delivery log, for staff and `review` keys: each endpoint is
its tenant's, and a caller sees its own tenant's only (a local staff login: the default
tenant's)."""

import base64
import secrets
from collections.abc import Iterable
from uuid import UUID

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memories.accounts.tenants import default_tenant
from memories.errors import InvalidInput, NotFound
from memories.models import Tenant, User
from webhooks.events import deliveries_send_on_commit, endpoints_changed
from webhooks.models import DeliveryStatus, EventType, WebhookDelivery, WebhookEndpoint
from webhooks.targets import TargetRefused, resolve

SECRET_PREFIX = "whsec_"


def secret_new() -> str:
    """A signing secret in the Standard Webhooks form: whsec_ + base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def tenant_of(actor: User) -> Tenant:
    """The tenant whose endpoints the actor manages: a key's account's, else the default."""
    return actor.tenant or default_tenant()


def url_validate(url: str) -> str:
    """Raises InvalidInput naming url when it is no http(s) URL or its host is not public
    (unless WEBHOOK_ALLOW_PRIVATE)."""
    try:
        resolve(url)
    except TargetRefused as refused:
        raise InvalidInput(str(refused), field="url") from None
    return url


def events_validate(events: Iterable[str]) -> list[str]:
    """Known event names, deduplicated, in the order given. Raises InvalidInput naming events."""
    events = list(dict.fromkeys(events))
    unknown = [name for name in events if name not in EventType.values]
    if unknown:
        raise InvalidInput(
            f"Unknown event {unknown[0]!r}; the events are {', '.join(EventType.values)}.",
            field="events",
        )
    if not events:
        raise InvalidInput("Subscribe to at least one event.", field="events")
    return events


def endpoints_for(*, actor: User) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(tenant=tenant_of(actor)).order_by("created_at")


def endpoint_get(*, endpoint_id: UUID, actor: User) -> WebhookEndpoint:
    """Raises NotFound (another tenant's endpoints are not found either)."""
    endpoint = endpoints_for(actor=actor).filter(id=endpoint_id).first()
    if endpoint is None:
        raise NotFound("No webhook endpoint with this id.", field="id")
    return endpoint


def endpoint_create(
    *, actor: User, url: str, events: Iterable[str], description: str = "", is_active=True
) -> WebhookEndpoint:
    """A new endpoint of the actor's tenant with a new secret (the caller shows it once).
    Raises InvalidInput (url, events)."""
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant_of(actor),
        url=url_validate(url),
        events=events_validate(events),
        description=description,
        is_active=is_active,
        secret=secret_new(),
    )
    endpoints_changed()
    return endpoint


def endpoint_update(*, endpoint: WebhookEndpoint, changes: dict) -> WebhookEndpoint:
    """Change url, events, description or is_active. Raises InvalidInput."""
    if "url" in changes:
        url_validate(changes["url"])
    if "events" in changes:
        changes["events"] = events_validate(changes["events"])
    for name, value in changes.items():
        setattr(endpoint, name, value)
    endpoint.save(update_fields=[*changes, "updated_at"])
    endpoints_changed()
    return endpoint


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    """Delete the endpoint with its delivery log."""
    endpoint.delete()
    endpoints_changed()


def endpoint_rotate_secret(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """A new secret; the next attempt of every delivery is signed with it."""
    endpoint.secret = secret_new()
    endpoint.save(update_fields=["secret", "updated_at"])
    return endpoint


def deliveries_for(*, endpoint: WebhookEndpoint) -> QuerySet[WebhookDelivery]:
    """The endpoint's deliveries, newest first, with their attempts."""
    return (
        WebhookDelivery.objects.filter(endpoint=endpoint)
        .order_by("-created_at", "-id")
        .prefetch_related("attempts")
    )


def delivery_get(*, endpoint: WebhookEndpoint, delivery_id: UUID) -> WebhookDelivery:
    """Raises NotFound."""
    delivery = deliveries_for(endpoint=endpoint).filter(id=delivery_id).first()
    if delivery is None:
        raise NotFound("No delivery with this id for this endpoint.", field="delivery_id")
    return delivery


def deliveries_replay(*, delivery_ids: Iterable[UUID]) -> int:
    """Queue a new attempt of each delivery now, with the same webhook-id, and a full round
    of retries should it fail. Returns how many."""
    ids = list(delivery_ids)
    with transaction.atomic():
        replayed = WebhookDelivery.objects.filter(id__in=ids).update(
            status=DeliveryStatus.PENDING, next_attempt_at=timezone.now(), failures=0
        )
        deliveries_send_on_commit(ids)
    return replayed
