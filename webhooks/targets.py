"""Where a webhook may be sent: http(s) URLs whose host is, and resolves to, public addresses
only, unless WEBHOOK_ALLOW_PRIVATE is on. Checked when an endpoint is saved and again before
every attempt (DNS can change); the attempt then connects to the address checked here, so a
second lookup cannot swap in another one."""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(Exception):
    """The URL may not be a webhook target; the message says why."""


@dataclass(frozen=True)
class Target:
    host: str  # as in the URL: the Host header and the name TLS checks
    addresses: tuple[str, ...]  # every address it resolves to, checked, in the resolver's order


def url_check(url: str) -> tuple[str, int]:
    """The URL's host and port when it is an http(s) URL with a host. Raises TargetRefused."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise TargetRefused(f"Not a valid URL: {error}.") from None
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("The URL must start with http:// or https://.")
    if not parts.hostname:
        raise TargetRefused("The URL has no host.")
    if parts.username or parts.password:
        raise TargetRefused("The URL may not carry a user name or password.")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def is_public(address: IpAddress) -> bool:
    """False for private, loopback, link-local, reserved, multicast and unspecified addresses,
    and for IPv6 forms of IPv4 addresses (mapped, 6to4, Teredo) whose IPv4 address is one."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # the IPv4 address is the one connected to
            return is_public(address.ipv4_mapped)
        embedded = address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None and not is_public(embedded):
            return False
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
        or not address.is_global
    )


def resolve(url: str) -> Target:
    """The addresses an attempt to `url` may connect to: all the host resolves to, each
    checked. Raises TargetRefused (a private address and
    WEBHOOK_ALLOW_PRIVATE off, a name that does not resolve, not an http(s) URL)."""
    host, port = url_check(url)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as error:
        raise TargetRefused(f"The host {host!r} does not resolve: {error}.") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    if not addresses:
        raise TargetRefused(f"The host {host!r} does not resolve.")
    if not settings.WEBHOOK_ALLOW_PRIVATE:
        for address in addresses:
            if not is_public(address):
                raise TargetRefused(
                    f"The host {host!r} is or resolves to {address}, a private, loopback or "
                    "otherwise non-public address (allowed only with WEBHOOK_ALLOW_PRIVATE=true)."
                )
    return Target(host=host, addresses=tuple(dict.fromkeys(str(a) for a in addresses)))
