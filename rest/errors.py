"""One JSON shape for every API error: {"code", "detail", "fields"} (ops.errors.error_body).

`fields` maps each offending field to its messages, so a client can show the error beside
the input that caused it; `detail` is one readable sentence.
"""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, UnreadablePostError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from memories.errors import ServiceError
from ops.errors import error_body


def _flatten(detail, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error details as {"field" or "field.0.sub": [messages]}."""
    if isinstance(detail, dict):
        flat: dict[str, list[str]] = {}
        for name, value in detail.items():
            key = f"{prefix}.{name}" if prefix else str(name)
            flat.update(_flatten(value, key))
        return flat
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return {prefix or "non_field_errors": [str(item) for item in detail]}
        flat = {}
        for index, item in enumerate(detail):
            if item:
                flat.update(_flatten(item, f"{prefix}.{index}" if prefix else str(index)))
        return flat
    return {prefix or "non_field_errors": [str(detail)]}


INCOMPLETE_BODY = "The request body ended before it was complete."


def exception_handler(exc, context):
    exc = getattr(exc, "service_error", exc)
    if isinstance(exc, ServiceError):
        return Response(error_body(exc.code, exc.detail, exc.fields), status=exc.status_code)
    if isinstance(exc, UnreadablePostError):  # the client stopped sending the body
        return Response(
            error_body("incomplete_body", INCOMPLETE_BODY, {"body": [INCOMPLETE_BODY]}), status=400
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # unexpected: ApiJsonErrorsMiddleware answers a JSON 500

    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        name, messages = next(iter(fields.items()))
        detail = messages[0] if name == "non_field_errors" else f"{name}: {messages[0]}"
        response.data = error_body("invalid", detail, fields)
    elif isinstance(exc, exceptions.ParseError):
        detail = str(exc.detail)
        response.data = error_body("parse_error", detail, {"body": [detail]})
    elif isinstance(exc, exceptions.UnsupportedMediaType):
        detail = f"{exc.detail} Send JSON with Content-Type: application/json."
        response.data = error_body("unsupported_media_type", detail, {"body": [detail]})
    else:
        code = exc.get_codes() if hasattr(exc, "get_codes") else "error"
        response.data = error_body(code if isinstance(code, str) else "error", str(exc.detail))
    return response
