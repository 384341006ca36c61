"""Every /api/ path answers JSON: also for URLs that match nothing (Django's HTML 404 page
in DEBUG), oversized bodies, a Host the service does not serve, and unexpected errors."""

import io
import logging

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, JsonResponse

from rest.errors import INCOMPLETE_BODY, error_body
from rest.request_body import DechunkedInput, MalformedBody, is_dechunked

logger = logging.getLogger(__name__)
# Where Django itself logs a disallowed Host, so existing log filters keep working.
security_logger = logging.getLogger("django.security.DisallowedHost")

_CODES = {
    400: ("bad_request", "The request could not be read."),
    403: ("permission_denied", "You do not have permission to perform this action."),
    404: ("not_found", "No such API path."),
    405: ("method_not_allowed", "This method is not allowed here."),
    413: ("request_too_large", "The request body is too large."),
    500: ("server_error", "Something went wrong on our side; the error was logged."),
}


def disallowed_host_error(request: HttpRequest) -> dict | None:
    """The API's 400 error body when the request's Host is not one ALLOWED_HOSTS names (as
    Django's get_host() decides it), logged where Django logs it; None for an allowed host."""
    try:
        request.get_host()
    except DisallowedHost:
        security_logger.warning(
            "Invalid HTTP_HOST header on %s: %r", request.path, request.META.get("HTTP_HOST")
        )
        detail = "The Host header names a host this service does not serve."
        return error_body("disallowed_host", detail, {"Host": [detail]})
    return None


def _body_error(code: str, detail: str, status: int) -> JsonResponse:
    return JsonResponse(error_body(code, detail, {"body": [detail]}), status=status)


def _too_large(limit: int) -> JsonResponse:
    return _body_error("request_too_large", f"The request body is larger than {limit} bytes.", 413)


def _is_chunked(request) -> bool:
    encoding = request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    return "chunked" in encoding and not request.META.get("CONTENT_LENGTH")


def _length_required() -> JsonResponse:
    """411 for a chunked body the server did not de-chunk (runserver)."""
    detail = "Send the body with a Content-Length; this server cannot read it chunked."
    return _body_error("length_required", detail, 411)


def _read_chunked(request, *, limit: int) -> JsonResponse | None:
    """A body sent with Transfer-Encoding: chunked has no Content-Length, so Django reads it as
    empty ("key: This field is required"). The server de-chunked it (gunicorn): it is read
    here, up to the limit, and handed on with its length."""
    try:
        body = DechunkedInput(request.META["wsgi.input"]).read(limit + 1)
    except MalformedBody as error:
        return _body_error(error.code, error.detail, 400)
    except OSError:  # the client stopped sending (gunicorn: NoMoreData)
        return _body_error("incomplete_body", INCOMPLETE_BODY, 400)
    if len(body) > limit:
        return _too_large(limit)
    request._stream = io.BytesIO(body)
    request._read_started = False
    request.META["CONTENT_LENGTH"] = str(len(body))
    return None


class ApiJsonErrorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        # Django would raise DisallowedHost in the middleware after us and answer its HTML
        # 400 page (or, with DEBUG, its debug page): answer it here, first in MIDDLEWARE.
        refusal = disallowed_host_error(request)
        if refusal is not None:
            return JsonResponse(refusal, status=400)
        response = self.get_response(request)
        if response.status_code == 411:
            # Without a Content-Length (CommonMiddleware set one), runserver closes the
            # connection after the answer (a WSGI application may not send `Connection:
            # close` itself): the chunks it left unread are not read as the next request.
            del response["Content-Length"]
        content_type = response.get("Content-Type", "")
        if response.status_code >= 400 and not content_type.startswith("application/json"):
            code, detail = _CODES.get(
                response.status_code, ("error", f"HTTP {response.status_code}")
            )
            return JsonResponse(error_body(code, detail), status=response.status_code)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        """Refuse a body over the view's limit before the view reads it: DRF's parsers stream
        the body and would not apply Django's size limit. The limit is
        DATA_UPLOAD_MAX_MEMORY_SIZE unless the view names another setting in
        `body_limit_setting` (the import takes files far larger than a JSON body, and reads
        a chunked one itself). A chunked body is read here, or refused (411) when the server
        did not de-chunk it."""
        if not request.path.startswith("/api/"):
            return None
        view_class = getattr(view_func, "cls", None)
        setting = getattr(view_class, "body_limit_setting", "DATA_UPLOAD_MAX_MEMORY_SIZE")
        limit = getattr(settings, setting)
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > limit:
            return _too_large(limit)
        if _is_chunked(request):
            # Every view, the import too: a body the server did not de-chunk is not there.
            if not is_dechunked(request):
                return _length_required()
            if setting == "DATA_UPLOAD_MAX_MEMORY_SIZE":
                return _read_chunked(request, limit=limit)
        return None

    def process_exception(self, request, exception):
        if not request.path.startswith("/api/"):
            return None
        logger.exception("unhandled error on %s %s", request.method, request.path)
        code, detail = _CODES[500]
        return JsonResponse(error_body(code, detail), status=500)
