"""GET /healthz, /readyz and /metrics: plain Django views, outside the API (and its OpenAPI
schema), without the API's authentication."""

import hmac
import ipaddress
from functools import cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST

from config.login_throttle import client_ip
from ops import health, metrics
from ops.errors import error_body


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers. Checks nothing else, so a database outage does not get
    every web process restarted."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when every check passes, else 503 naming the checks that failed."""
    status, body = health.readiness_answer()
    return JsonResponse(body, status=status)


@never_cache
@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus text format, for the callers METRICS_TOKEN and METRICS_ALLOWED_NETWORKS
    let in (both, when both are set); closed when neither is set."""
    refusal = _metrics_refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(
        metrics.exposition(*metrics.SCRAPE_COLLECTORS), content_type=CONTENT_TYPE_LATEST
    )


def _metrics_refusal(request: HttpRequest) -> JsonResponse | None:
    token, networks = settings.METRICS_TOKEN, tuple(settings.METRICS_ALLOWED_NETWORKS)
    if not token and not networks:
        detail = "Metrics are closed: set METRICS_TOKEN or METRICS_ALLOWED_NETWORKS to open them."
        return JsonResponse(error_body("metrics_closed", detail), status=403)
    if networks and not _address_in(client_ip(request), networks):
        detail = "This address may not read metrics (METRICS_ALLOWED_NETWORKS)."
        return JsonResponse(error_body("permission_denied", detail), status=403)
    if token:
        scheme, _, sent = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            sent.strip().encode(), token.encode()
        ):
            detail = "Send the metrics token: Authorization: Bearer <METRICS_TOKEN>."
            response = JsonResponse(error_body("not_authenticated", detail), status=401)
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    return None


@cache
def _parsed(networks: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def _address_in(address: str | None, networks: tuple[str, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip in network for network in _parsed(networks))
