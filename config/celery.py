"""The Celery app. Without CELERY_BROKER_URL tasks run in-process (see settings): inline, or
in a serving process on its embedded worker (config.embedded_worker)."""

import os

from celery import Celery
from celery.signals import setup_logging, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# The task class sends a task to the embedded worker while one runs in this process; by name,
# as Celery resolves it once the app is finalized.
app = Celery("memory_service", task_cls="config.embedded_worker:EmbeddedTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def keep_django_logging(**kwargs) -> None:
    """A worker logs as the web processes do (settings.LOGGING, LOG_FORMAT and LOG_LEVEL):
    with a receiver here Celery leaves logging alone instead of installing its own handler."""


@worker_ready.connect
def say_which_extractor_runs(**kwargs) -> None:
    """A worker, once ready, names the extractor its tasks use, as each serving process does
    (config/serving.py); beat and management commands, which extract nothing at start, do not."""
    # Here, not above: this module loads with the config package, before Django is set up.
    from extraction.llm import extractor_log

    extractor_log()
