"""The two hooks django-axes calls (settings AXES_CLIENT_IP_CALLABLE, AXES_LOCKOUT_CALLABLE):
whose address a failed login counts against, and the 429 a locked-out login gets."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

from memories.api.errors import error_body


def client_ip(request: HttpRequest) -> str | None:
    """REMOTE_ADDR, or behind TRUSTED_PROXY_COUNT proxies the address the outermost of them
    appended to X-Forwarded-For. Entries left of it come from the client and are not trusted."""
    count = settings.TRUSTED_PROXY_COUNT
    if count:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        forwarded = [address.strip() for address in forwarded if address.strip()]
        if len(forwarded) >= count:
            return forwarded[-count]
    return request.META.get("REMOTE_ADDR")


def lockout_response(request: HttpRequest, original_response=None, credentials=None):
    """429 with Retry-After: the API's JSON error on /api/ paths, a short page elsewhere (the
    admin login). Every refused attempt restarts the cool-off, so it lasts this long from now."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    detail = (
        "Too many failed logins from this address or for this username; "
        f"try again in {seconds} seconds."
    )
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body("throttled", detail), status=429)
    else:
        response = HttpResponse(
            "<!doctype html><html lang=en><meta charset=utf-8>"
            "<title>Too many failed logins</title>"
            f"<h1>Too many failed logins</h1><p>{escape(detail)}</p></html>",
            status=429,
        )
    response["Retry-After"] = str(seconds)
    return response
