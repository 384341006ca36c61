from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        # Registers the Celery tasks, which webhooks.events and the beat schedule send by name.
        from webhooks import tasks  # noqa: F401
