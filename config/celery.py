"""The Celery app. Without CELERY_BROKER_URL tasks run in-process (see settings)."""

import os

from celery import Celery
from celery.signals import setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("memory_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def keep_django_logging(**kwargs) -> None:
    """A worker logs as the web processes do (settings.LOGGING, LOG_FORMAT and LOG_LEVEL):
    with a receiver here Celery leaves logging alone instead of installing its own handler."""
