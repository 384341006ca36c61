"""Logs (docs/operations.md), part of config.settings."""

from config.settings_env import DEBUG, env

# json: one JSON object a line, with the request id (and user, route, task) on every line;
# console: text for a terminal. Memory and message text is never logged at INFO.
LOG_FORMAT = env.choice("LOG_FORMAT", ("json", "console"), default="console" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_context": {"()": "ops.logs.RequestContextFilter"},
        "idle_periodic_task": {"()": "ops.logs.IdlePeriodicTaskFilter"},
    },
    "formatters": {
        "json": {"()": "ops.logs.JsonFormatter"},
        "console": {"()": "ops.logs.ConsoleFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_context"],
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        # Through the root handler, in LOG_FORMAT, instead of Django's own text handlers.
        "django": {"level": "INFO"},
        # runserver's request lines carry query strings; ops.requests logs each request.
        "django.server": {"level": "WARNING"},
        # Celery's line for each task that ended: not for a periodic one that had nothing to do.
        "celery.app.trace": {"filters": ["idle_periodic_task"]},
    },
}
