"""First in MIDDLEWARE, around everything else: gives each request its id (the caller's
X-Request-Id when sane, else a new one) for the log lines written while it is answered and
for the response header; counts and times it for /metrics by URL pattern; and logs one line
for it, with the user, route, status and time. That line has the path, never the query
string (a search's words). With SERVER_TIMING on, it also adds the Server-Timing header
(ops.timing)."""

import logging
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from ops import context, metrics, timing

logger = logging.getLogger("ops.requests")

# Probes and scrapes come every few seconds: their lines are DEBUG unless they fail.
QUIET_ROUTES = {"/healthz", "/readyz", "/metrics"}
UNMATCHED = "<unmatched>"


class RequestObservationMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.static_prefix = "/" + settings.STATIC_URL.lstrip("/")
        self.server_timing = settings.SERVER_TIMING

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = context.request_id_from(request.headers.get("X-Request-Id"))
        # Ended on request_finished (ops.signals), once the server has sent the response.
        context.start_request(request, request_id)
        if self.server_timing:
            timing.start_request()
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            stages = timing.end_request() if self.server_timing else None
        seconds = time.perf_counter() - started
        response["X-Request-Id"] = request_id
        if stages is not None:
            response["Server-Timing"] = timing.header_value(stages, app_seconds=seconds)
        self._record(request, response, seconds)
        return response

    def _record(self, request: HttpRequest, response: HttpResponse, seconds: float) -> None:
        route = context.request_route(request)
        if route is None:
            # whitenoise answers static files before URL resolution; anything else is a 404.
            route = "/static/{path}" if request.path.startswith(self.static_prefix) else UNMATCHED
        metrics.observe_request(
            route=route, method=str(request.method), status=response.status_code, seconds=seconds
        )
        quiet = route in QUIET_ROUTES and response.status_code < 400
        logger.log(
            logging.DEBUG if quiet else logging.INFO,
            "%s %s %s %.1fms",
            request.method,
            request.path,
            response.status_code,
            seconds * 1000,
            extra={
                "method": request.method,
                "path": request.path,
                "route": route,
                "status": response.status_code,
                "duration_ms": round(seconds * 1000, 2),
                "user_id": context.request_user_id(request),
            },
        )
