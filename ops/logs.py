"""Log formats for settings.LOGGING (LOG_FORMAT): `json`, one JSON object a line, and
`console`, text for a terminal. RequestContextFilter adds the request id (and user, route,
task) from ops.context to every record, whichever logger wrote it.

Loaded while Django configures logging, before the apps: nothing here may import models."""

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
