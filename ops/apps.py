from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "ops"

    def ready(self) -> None:
        # The Celery signal receivers: request ids into tasks, task outcomes into metrics.
        from ops import signals  # noqa: F401
