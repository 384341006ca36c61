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
when, and the periodic task sends what is due in all three set-ups alike."""

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
from django.conf import settings
from django.db.models import F
from django.utils import timezone
from standardwebhooks import Webhook

from webhooks.models import (
    AttemptOutcome,
    DeliveryStatus,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)
from webhooks.targets import Target, TargetRefused, resolve

logger = logging.getLogger("webhooks.delivery")

# At most this many due deliveries per run of the periodic task; the rest wait for the next.
DUE_BATCH = 100
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


def delivery_attempt(*, delivery_id: UUID | str) -> str:
    """Attempt the delivery if it is due (and its endpoint active), claiming it first.
    Returns the attempt's outcome, or "not_due" when it was not attempted here."""
    now = timezone.now()
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


def deliveries_due_attempt(*, limit: int = DUE_BATCH) -> int:
    """Attempt the due deliveries of active endpoints, oldest first. Returns how many were
    attempted here (others may have been claimed by another worker first)."""
    due = list(
        WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING,
            next_attempt_at__lte=timezone.now(),
            endpoint__is_active=True,
        )
        .order_by("next_attempt_at")
        .values_list("id", flat=True)[:limit]
    )
    return sum(delivery_attempt(delivery_id=delivery_id) != "not_due" for delivery_id in due)
