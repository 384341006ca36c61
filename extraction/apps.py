from django.apps import AppConfig


class ExtractionConfig(AppConfig):
    name = "extraction"

    def ready(self) -> None:
        # Registers the Celery tasks, which extraction.runs sends by name.
        from extraction import tasks  # noqa: F401
