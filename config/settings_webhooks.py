"""Webhooks (docs/webhooks.md): how long a delivery may take, when a failed one is tried again,
whether private addresses may be targets, and how often due deliveries are looked for."""

from config.env import ConfigurationError
from config.settings_env import env

# Seconds an attempt may take (connect, send, read the answer) before it counts as failed.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=5.0)
# The wait before each retry of a failed delivery; after the last one it is `failed`.
_retry_seconds = env.str("WEBHOOK_RETRY_SECONDS", default="5,30,120,600,3600")
try:
    WEBHOOK_RETRY_SECONDS = [float(part) for part in _retry_seconds.split(",") if part.strip()]
except ValueError:
    WEBHOOK_RETRY_SECONDS = [-1.0]  # reported just below
if WEBHOOK_TIMEOUT_SECONDS <= 0 or any(seconds < 0 for seconds in WEBHOOK_RETRY_SECONDS):
    raise ConfigurationError(
        "WEBHOOK_TIMEOUT_SECONDS must be above 0 and WEBHOOK_RETRY_SECONDS a comma-separated "
        "list of seconds from 0"
    )
# Targets on private, loopback, link-local and other non-public addresses are refused unless
# this is on (a receiver on the same machine or network, as in development and the tests).
WEBHOOK_ALLOW_PRIVATE = env.bool("WEBHOOK_ALLOW_PRIVATE", default=False)
# How often the periodic task sends the deliveries that are due (retries, lost first sends).
WEBHOOK_DISPATCH_INTERVAL_SECONDS = env.int(
    "WEBHOOK_DISPATCH_INTERVAL_SECONDS", default=5, minimum=1
)
# Deliveries never wait behind extraction, nor extraction behind a slow receiver: their tasks
# go to a queue of their own, which a worker of their own consumes (`celery worker -Q` with this
# name; scripts/serve --production runs one), and the embedded default runs them on threads of
# their own.
WEBHOOK_QUEUE = env.str("WEBHOOK_QUEUE", default="webhooks")
if not WEBHOOK_QUEUE.strip() or WEBHOOK_QUEUE == "celery":
    raise ConfigurationError(
        "WEBHOOK_QUEUE must name a queue other than celery, the one extraction's tasks use"
    )
CELERY_TASK_ROUTES = {"webhooks.tasks.*": {"queue": WEBHOOK_QUEUE}}
# Attempts under way at once: the embedded default's delivery threads, and the threads of the
# production set's webhook worker. One endpoint has one attempt under way at a time
# (webhooks.delivery), so a slow receiver holds one of them, never all.
WEBHOOK_CONCURRENCY = env.int("WEBHOOK_CONCURRENCY", default=4, minimum=1)
WEBHOOK_BEAT_SCHEDULE = {
    "deliver-webhooks": {
        "task": "webhooks.tasks.deliver_due_webhooks_task",
        "schedule": WEBHOOK_DISPATCH_INTERVAL_SECONDS,
    },
}
