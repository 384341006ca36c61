"""Login throttling with django-axes (settings AXES_*): the handler that counts failures per
(username, address) and per address with a limit of its own, whose address a failed login
counts against, the 429 a locked-out login gets, the warning a staff lockout raises, and the
way out of a lockout (manage.py unlock_login)."""

import hashlib
import logging
from collections.abc import Iterable

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.core.cache import cache
from django.db.models import Q, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

from ops.errors import error_body

logger = logging.getLogger(__name__)


class PairAndAddressHandler(AxesDatabaseHandler):
    """axes compares one failure count with one limit (AXES_FAILURE_LIMIT). Counted per
    AXES_LOCKOUT_PARAMETERS = [[username, ip_address], ip_address], the address's count is
    put in units of that limit, so that it reaches it at LOGIN_ADDRESS_FAILURE_LIMIT."""

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        """Record the failure with NUL bytes in the client's User-Agent, Accept and path
        written as "0x00", as axes itself writes them in the query and form it stores:
        PostgreSQL's text refuses NUL, and the login answered 500 instead of counting."""
        if request is not None:
            for name in ("axes_user_agent", "axes_http_accept", "axes_path_info"):
                value = getattr(request, name, None)
                if isinstance(value, str):
                    setattr(request, name, value.replace("\0", "0x00"))
        return super().user_login_failed(sender, credentials, request, **kwargs)

    def get_failures(self, request, credentials=None) -> int:
        pair, address = (
            attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            for attempts in self.get_user_attempts(request, credentials)
        )
        scaled = address * settings.AXES_FAILURE_LIMIT // settings.LOGIN_ADDRESS_FAILURE_LIMIT
        return max(pair, scaled)


def staff_lockout_warn(sender, request, username: str | None, ip_address: str, **kwargs):
    """axes' user_locked_out signal: count it, and when the username is a staff account's,
    log a warning once per cool-off that says how to lift it (an admin may be shut out of
    the admin, or someone is guessing an admin's password)."""
    from memories.models import User
    from ops import metrics

    staff = bool(username) and User.objects.filter(username=username, is_staff=True).exists()
    # Hashed: a username may hold spaces or characters no cache key may.
    who = hashlib.sha256(f"{username}\0{ip_address}".encode()).hexdigest()
    key = f"login-lockout-warned:{who}"
    if not cache.add(key, True, timeout=int(settings.AXES_COOLOFF_TIME.total_seconds())):
        return  # this lockout was already counted (every refused attempt signals again)
    metrics.LOGIN_LOCKOUTS.labels(str(staff).lower()).inc()
    if staff:
        logger.warning(
            "Logins of the staff account %r from %s are locked out after repeated failures. "
            "If that was the admin, lift it with: manage.py unlock_login --username %s",
            username,
            ip_address,
            username,
        )


def login_unlock(
    *, usernames: Iterable[str] = (), addresses: Iterable[str] = (), everyone: bool = False
) -> int:
    """Lift the lockouts of these usernames (from every address) and of these addresses (for
    every username), or all of them: the counted failures are database rows every process
    reads, so the next login anywhere is let through. Returns how many rows were deleted."""
    from axes.models import AccessAttempt

    attempts = AccessAttempt.objects.all()
    if not everyone:
        usernames, addresses = list(usernames), list(addresses)
        if not usernames and not addresses:
            return 0
        attempts = attempts.filter(Q(username__in=usernames) | Q(ip_address__in=addresses))
    deleted, _ = attempts.delete()
    return deleted


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
        "Too many failed logins for this username from this address, or from this address; "
        f"try again in {seconds} seconds."
    )
    response: HttpResponse
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
