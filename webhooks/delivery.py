"""Sending deliveries: claim, sign (Standard Webhooks, with the `standardwebhooks` package),
POST with httpx, record the attempt and what comes next (delivered; due again after the next
wait of WEBHOOK_RETRY_SECONDS; failed after the last).

An attempt (connect, send, wait for the status line) ends after WEBHOOK_TIMEOUT_SECONDS in
all, however slowly the receiver answers: httpx's own timeouts bound each read, so a receiver
sending a byte every few seconds would hold one attempt, and the worker running it, for as
long as it likes. The request runs on httpx's async client under an asyncio deadline, which
cancels it and closes its connection.

The claim is a conditional UPDATE of the delivery's `next_attempt_at` (due -> past this
attempt's bound and a margin): of two workers, or a task and the periodic sweep, meeting on
one delivery, exactly one updates the row and sends; the claim outlives the attempt, so
nothing is sent twice while one is in flight; a worker that dies mid-attempt leaves the
delivery due again once that time has passed. Retries are not Celery countdowns: without a
broker a task runs at once (the embedded worker, inline), so the row's `next_attempt_at` says
when, and the periodic task sends what is due in all three set-ups alike.

One endpoint has one attempt under way at a time: a worker holds the endpoint
(`sending_until`, taken and kept as a claim is) while it sends, and then sends that endpoint's
other due deliveries, oldest first, while they are delivered (for up to DRAIN_SECONDS). A
task finding its endpoint held leaves its delivery to the holder. So a receiver that answers
slowly, or not at all, holds one delivery worker at a time and its own deliveries wait, while
other endpoints' deliveries go on on the other workers (WEBHOOK_CONCURRENCY)."""

import asyncio
import functools
import logging
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

import certifi
import httpx
from celery import current_app
from django.conf import settings
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone
from standardwebhooks import Webhook

from webhooks.models import (
    DELIVER_TASK,
    AttemptOutcome,
    DeliveryStatus,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)
from webhooks.targets import Target, TargetRefused, resolve

logger = logging.getLogger("webhooks.delivery")

# At most this many endpoints' due deliveries sent per run of the periodic task; the rest
# wait for the next.
DUE_BATCH = 100
# How long a worker holding an endpoint goes on sending its due deliveries before it lets
# the endpoint go (the next sweep sends the rest, on whichever worker is free).
DRAIN_SECONDS = 30.0
USER_AGENT = "memory-service-webhooks/1"
# A claim lasts an attempt's bound and this much more: the target's name is looked up before
# the bound starts (the system's resolver cannot be cancelled: its own timeouts, a few seconds
# a try, apply), and the attempt is recorded after it ends.
CLAIM_MARGIN_SECONDS = 30.0


@dataclass(frozen=True)
class Sent:
    outcome: str
    status_code: int | None = None
    error: str = ""


def claim_seconds() -> float:
    """How long a claim holds a delivery: longer than any attempt can take."""
    return settings.WEBHOOK_TIMEOUT_SECONDS + CLAIM_MARGIN_SECONDS


def _claim(delivery_id: UUID | str, now: datetime) -> bool:
    claim_until = now + timedelta(seconds=claim_seconds())
    return bool(
        WebhookDelivery.objects.filter(
            id=delivery_id,
            status=DeliveryStatus.PENDING,
            next_attempt_at__lte=now,
            endpoint__is_active=True,
        ).update(next_attempt_at=claim_until)
    )


def signed_headers(endpoint: WebhookEndpoint, delivery: WebhookDelivery, at: datetime) -> dict:
    """The Standard Webhooks headers of one attempt, signed with the endpoint's secret now
    (a rotated secret signs the next attempt)."""
    signature = Webhook(endpoint.secret).sign(delivery.message_id, at, delivery.body)
    return {
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Made once per process: loading the CA bundle costs tens of milliseconds an attempt.
    return ssl.create_default_context(cafile=certifi.where())


def _described(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"[:500]


def _send(endpoint: WebhookEndpoint, delivery: WebhookDelivery, at: datetime) -> Sent:
    try:
        target = resolve(endpoint.url)
    except TargetRefused as refused:
        return Sent(AttemptOutcome.REFUSED, error=str(refused))
    headers = signed_headers(endpoint, delivery, at)
    headers["host"] = httpx.URL(endpoint.url).netloc.decode("ascii")
    return _run_to_end(_post_within_bound(endpoint.url, target, headers, delivery.body.encode()))


def _run_to_end(coroutine):
    """Run `coroutine` on an event loop of its own, which is closed with whatever it left.
    A worker thread has no loop; a caller that is in one (an in-process task sent from async
    code) gets the loop on a short-lived thread instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="webhook-attempt") as thread:
        return thread.submit(asyncio.run, coroutine).result()


async def _post_within_bound(url: str, target: Target, headers: dict, body: bytes) -> Sent:
    """POST to the target's addresses in turn, all within WEBHOOK_TIMEOUT_SECONDS: past it
    the request under way is cancelled (its connection closed) and the attempt is a timeout."""
    bound = settings.WEBHOOK_TIMEOUT_SECONDS
    try:
        async with asyncio.timeout(bound):
            return await _post(url, target, headers, body, bound)
    except TimeoutError:
        return Sent(AttemptOutcome.TIMEOUT, error=f"Timeout: no answer within {bound:g} s in all")


async def _post(url: str, target: Target, headers: dict, body: bytes, bound: float) -> Sent:
    # Connect to an address just checked (no second lookup that DNS could answer
    # differently), the next one when it refuses the connection (a name with an IPv6 and an
    # IPv4 address, a server on one of them); the Host header and TLS (SNI, the
    # certificate's name) keep the host name.
    status_code = None
    failed = Sent(AttemptOutcome.ERROR, error="no address")
    async with httpx.AsyncClient(timeout=bound, verify=_tls_context(), trust_env=False) as client:
        for address in target.addresses:
            try:
                # Streamed and closed unread: only the status counts, and a receiver's
                # answer, however large, is never loaded.
                async with client.stream(
                    "POST",
                    httpx.URL(url).copy_with(host=address),
                    content=body,
                    headers=headers,
                    extensions={"sni_hostname": target.host},
                ) as response:
                    status_code = response.status_code
                break
            except httpx.ConnectError as error:  # refused: the next address may answer
                failed = Sent(AttemptOutcome.ERROR, error=_described(error))
            except httpx.TimeoutException as error:
                return Sent(AttemptOutcome.TIMEOUT, error=_described(error))
            except httpx.HTTPError as error:
                return Sent(AttemptOutcome.ERROR, error=_described(error))
    if status_code is None:
        return failed
    if 200 <= status_code < 300:
        return Sent(AttemptOutcome.DELIVERED, status_code=status_code)
    return Sent(AttemptOutcome.FAILED, status_code=status_code, error=f"HTTP {status_code}")


def _endpoint_take(endpoint_id: UUID, now: datetime) -> datetime | None:
    """Hold the endpoint for one attempt if nobody sends to it now; the time the hold lasts
    until (the holder's token), or None."""
    until = now + timedelta(seconds=claim_seconds())
    free = Q(sending_until__isnull=True) | Q(sending_until__lte=now)
    taken = WebhookEndpoint.objects.filter(free, id=endpoint_id, is_active=True).update(
        sending_until=until
    )
    return until if taken else None


def _endpoint_keep(endpoint_id: UUID, held: datetime, now: datetime) -> datetime | None:
    """Hold the endpoint held since `held` for one more attempt; None if the hold was lost
    (it lapsed and another worker took it)."""
    until = now + timedelta(seconds=claim_seconds())
    kept = WebhookEndpoint.objects.filter(id=endpoint_id, sending_until=held, is_active=True)
    return until if kept.update(sending_until=until) else None


def _endpoint_let_go(endpoint_id: UUID, held: datetime) -> None:
    WebhookEndpoint.objects.filter(id=endpoint_id, sending_until=held).update(sending_until=None)


def _due(now: datetime):
    return WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lte=now, endpoint__is_active=True
    )


def delivery_attempt(*, delivery_id: UUID | str) -> str:
    """Attempt the delivery if it is due (and its endpoint active and not being sent to),
    claiming it first; then, while they are delivered, the endpoint's other due deliveries.
    Returns the delivery's outcome, "not_due" when it was not attempted here, or
    "endpoint_busy" when another worker sends to its endpoint (and will send it)."""
    now = timezone.now()
    endpoint_id = _due(now).filter(id=delivery_id).values_list("endpoint_id", flat=True).first()
    if endpoint_id is None:
        return "not_due"
    held = _endpoint_take(endpoint_id, now)
    if held is None:
        logger.debug("webhook delivery %s: its endpoint is being sent to", delivery_id)
        return "endpoint_busy"
    try:
        outcome = _claimed_attempt(delivery_id, now)
        drain_until = time.monotonic() + DRAIN_SECONDS
        last = outcome
        while last == AttemptOutcome.DELIVERED and time.monotonic() < drain_until:
            now = timezone.now()
            next_id = (
                _due(now)
                .filter(endpoint_id=endpoint_id)
                .order_by("next_attempt_at")
                .values_list("id", flat=True)
                .first()
            )
            if next_id is None:
                break
            kept = _endpoint_keep(endpoint_id, held, now)
            if kept is None:
                break
            held = kept
            last = _claimed_attempt(next_id, now)
    finally:
        _endpoint_let_go(endpoint_id, held)
    return outcome


def _claimed_attempt(delivery_id: UUID | str, now: datetime) -> str:
    """Claim the delivery, attempt it and record the attempt; "not_due" when it could not be
    claimed."""
    if not _claim(delivery_id, now):
        return "not_due"
    delivery = WebhookDelivery.objects.select_related("endpoint").get(id=delivery_id)
    endpoint = delivery.endpoint
    started = time.monotonic()
    try:
        sent = _send(endpoint, delivery, now.astimezone(UTC))
    except Exception as error:  # recorded, never raised: the row must not stay claimed
        logger.exception("webhook delivery %s raised", delivery.message_id)
        sent = Sent(AttemptOutcome.ERROR, error=_described(error))
    duration_ms = int((time.monotonic() - started) * 1000)
    number = delivery.attempt_count + 1
    WebhookAttempt.objects.create(
        delivery=delivery,
        number=number,
        started_at=now,
        duration_ms=duration_ms,
        outcome=sent.outcome,
        status_code=sent.status_code,
        error=sent.error,
    )
    retries = settings.WEBHOOK_RETRY_SECONDS
    if sent.outcome == AttemptOutcome.DELIVERED:
        status, next_at = DeliveryStatus.DELIVERED, None
    elif delivery.failures < len(retries):
        wait = retries[delivery.failures]
        status, next_at = DeliveryStatus.PENDING, timezone.now() + timedelta(seconds=wait)
    else:
        status, next_at = DeliveryStatus.FAILED, None
    # The delivery may have been deleted meanwhile (its user erased, its endpoint deleted):
    # then this updates nothing.
    WebhookDelivery.objects.filter(id=delivery.id).update(
        status=status,
        next_attempt_at=next_at,
        attempt_count=F("attempt_count") + 1,
        failures=0 if sent.outcome == AttemptOutcome.DELIVERED else F("failures") + 1,
    )
    logger.info(
        "webhook %s to endpoint %s: attempt %d of %s %s: %s%s (%d ms)%s",
        delivery.event_type,
        endpoint.id,
        number,
        delivery.message_id,
        sent.outcome,
        sent.status_code or "-",
        f" {sent.error}" if sent.error and sent.outcome != AttemptOutcome.FAILED else "",
        duration_ms,
        f"; next attempt at {next_at.isoformat()}" if next_at else f"; delivery {status}",
    )
    return sent.outcome


def deliveries_due_send(*, limit: int = DUE_BATCH) -> int:
    """Send a delivery task for the oldest due delivery of each active endpoint nobody is
    sending to (the task sends that endpoint's other due ones after it), on the delivery
    queue: they run side by side on the delivery workers. Returns how many were sent."""
    now = timezone.now()
    oldest_due = (
        _due(now).filter(endpoint=OuterRef("pk")).order_by("next_attempt_at").values("id")[:1]
    )
    due_ids = list(
        WebhookEndpoint.objects.filter(Q(sending_until__isnull=True) | Q(sending_until__lte=now))
        .filter(is_active=True)
        .annotate(due_id=Subquery(oldest_due))
        .filter(due_id__isnull=False)
        .order_by("created_at")
        .values_list("due_id", flat=True)[:limit]
    )
    task = current_app.tasks[DELIVER_TASK]
    for delivery_id in due_ids:
        task.apply_async(args=[str(delivery_id)])
    return len(due_ids)
