"""Celery tasks: send one delivery, and send every delivery that is due (Celery beat and the
embedded scheduler, every WEBHOOK_DISPATCH_INTERVAL_SECONDS). Both claim before they send, so
a delivery is never sent twice at once however many workers run them."""

from celery import shared_task

from webhooks import delivery


@shared_task
def deliver_webhook_task(delivery_id: str) -> str:
    """Attempt one delivery if it is due; returns the outcome, or "not_due"."""
    return delivery.delivery_attempt(delivery_id=delivery_id)


@shared_task
def deliver_due_webhooks_task() -> int:
    """Attempt every due delivery (retries, and first sends whose task was lost)."""
    return delivery.deliveries_due_attempt()
