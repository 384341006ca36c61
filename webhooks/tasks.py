"""Celery tasks, on the delivery queue (WEBHOOK_QUEUE) of their own: send one delivery (and
its endpoint's other due ones), and send the tasks of the deliveries that are due (Celery beat
and the embedded scheduler, every WEBHOOK_DISPATCH_INTERVAL_SECONDS). A delivery is claimed
before it is sent, so it is never sent twice at once however many workers run them."""

from celery import shared_task

from webhooks import delivery


@shared_task
def deliver_webhook_task(delivery_id: str) -> str:
    """Attempt one delivery if it is due; returns the outcome, or "not_due"."""
    return delivery.delivery_attempt(delivery_id=delivery_id)


@shared_task
def deliver_due_webhooks_task() -> int:
    """Send the tasks of due deliveries (retries, and first sends whose task was lost), one
    per endpoint; returns how many."""
    return delivery.deliveries_due_send()
