"""Log formats for settings.LOGGING (LOG_FORMAT): `json`, one JSON object a line, and
`console`, text for a terminal. RequestContextFilter adds the request id (and user, route,
task) from ops.context to every record, whichever logger wrote it; IdlePeriodicTaskFilter
keeps a periodic task of the embedded scheduler that found nothing to do out of the log.

Loaded while Django configures logging, before the apps: nothing here may import models."""

import ast
import logging

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as BaseJsonFormatter

from ops import context


class RequestContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in context.fields().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        request = context.current_request()
        if request is not None:
            if not hasattr(record, "user_id"):
                user_id = context.request_user_id(request)
                if user_id is not None:
                    record.user_id = user_id
            if not hasattr(record, "route"):
                route = context.request_route(request)
                if route is not None:
                    record.route = route
        return True


class IdlePeriodicTaskFilter(logging.Filter):
    """Drops Celery's "Task ... succeeded" line of a periodic task the embedded scheduler ran
    (context.periodic_run) that found nothing to do: it returned 0, None, an empty value or
    counts that are all 0. The webhook sweep runs every few seconds, and a log that says so
    each time with nothing to send buries what happened. Kept at LOG_LEVEL=DEBUG. (A Celery
    worker logs each task it receives as well: there both lines stay.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        if not context.periodic_run.get():
            return True
        data = record.args if isinstance(record.args, dict) else None
        if not data or "return_value" not in data:
            return True
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            return True
        try:
            value = ast.literal_eval(str(data["return_value"]))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return True
        if isinstance(value, dict):
            return any(value.values())
        return bool(value)


class JsonFormatter(BaseJsonFormatter):
    """{"time", "level", "logger", "message", request_id, user_id, route..., "exc_info"}."""

    def __init__(self) -> None:
        super().__init__(
            "{levelname}{name}{message}",
            style="{",
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",
            # Django's request loggers pass the request object along, whose repr has the
            # query string (a search's words): never written out.
            reserved_attrs=[*RESERVED_ATTRS, "request"],
        )


class ConsoleFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
            defaults={"request_id": "-"},
        )
