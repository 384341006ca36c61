from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "ops"

    def ready(self) -> None:
        # The Celery signal receivers: request ids into tasks, task outcomes into metrics.
        from axes.signals import user_locked_out

        from config.login_throttle import staff_lockout_warn
        from ops import checks, signals  # noqa: F401

        user_locked_out.connect(staff_lockout_warn, dispatch_uid="staff_lockout_warn")
