from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the Celery tasks, which the stores and the beat schedule send by name.
        from memories import monitoring, tasks  # noqa: F401
        from ops import health, metrics

        health.register_check("embedder", monitoring.check_embedder)
        metrics.register_scrape_collector(monitoring.PendingReviewCollector())
