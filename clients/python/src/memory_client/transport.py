"""What the sync and async clients share about sending: the address and headers, when to retry
and how long to wait, and turning an answer into a result or an exception."""

import email.utils
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import httpx

from memory_client.calls import Call
from memory_client.errors import error_for

T = TypeVar("T")

# The service answers these before doing anything (a throttle, or the embedder unavailable
# before a write's transaction opens), so even a POST is safe to send again.
RETRY_STATUSES = frozenset({429, 503})

try:
    _VERSION = version("memory-service-client")
except PackageNotFoundError:  # imported from a source tree
    _VERSION = "0"
USER_AGENT = f"memory-service-client/{_VERSION} (python; httpx)"


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of 429 and 503 answers: at most `max_retries`, each after the answer's
    Retry-After (seconds or an HTTP date), or `backoff` * 2**n seconds when it has none. A
    Retry-After longer than `max_wait` is not waited for: the error is raised at once (a
    login lockout asks for 15 minutes)."""

    max_retries: int = 3
    max_wait: float = 30.0
    backoff: float = 0.5

    def delay(self, response: httpx.Response, retries_made: int) -> float | None:
        """Seconds to wait before sending again, or None to give up with this answer."""
        if response.status_code not in RETRY_STATUSES or retries_made >= self.max_retries:
            return None
        wait = retry_after(response)
        if wait is None:
            wait = self.backoff * 2**retries_made
        return wait if wait <= self.max_wait else None


def retry_after(response: httpx.Response) -> float | None:
    """The answer's Retry-After in seconds (from a number or an HTTP date), None without one."""
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class Connection:
    """Where and as whom requests go: the service's address, the key, the end user."""

    base_url: str
    api_key: str | None
    user_id: str | None

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if self.user_id is not None:
            headers["X-User-Id"] = self.user_id
        return headers

    def request(self, call: Call[Any]) -> dict[str, Any]:
        """The keyword arguments of httpx's request() for this call."""
        arguments: dict[str, Any] = {
            "method": call.method,
            "url": self.url(call.path),
            "headers": self.headers(),
            "params": dict(call.params),
        }
        if call.json is not None:
            arguments["json"] = call.json
        return arguments


def result(call: Call[T], response: httpx.Response) -> T:
    """The parsed answer, or the error it carries raised as its exception."""
    if response.is_success:
        return call.parse(response)
    try:
        body = response.json()
    except ValueError:
        body = None
    raise error_for(
        response.status_code, body, text=response.text, retry_after=retry_after(response)
    )
