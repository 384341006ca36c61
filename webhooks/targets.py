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

# IANA's special-purpose address registries (iana-ipv4-special-registry,
# iana-ipv6-special-registry, as of 2025) and the multicast ranges, every entry refused
# whatever its "globally reachable" column says (the few that are, anycast DNS and relay
# services, are no webhook receiver). Python's is_global follows the registry of its own
# release: 3.11.7 knows 192.0.0.0/29 and 192.0.0.170/31 but not the rest of 192.0.0.0/24
# (192.0.0.8, the dummy address, is "global" there; 3.13 knows it) and no release counts
# 192.88.99.0/24 (the deprecated 6to4 relay anycast) as anything but global. This list makes
# the rule the same on every Python.
SPECIAL_PURPOSE_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",  # this network
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # shared address space (carrier-grade NAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata)
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments (192.0.0.8 dummy, 192.0.0.9-10 anycast)
        "192.0.2.0/24",  # documentation
        "192.31.196.0/24",  # AS112-v4
        "192.52.193.0/24",  # AMT
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",  # private
        "192.175.48.0/24",  # direct delegation AS112
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the limited broadcast 255.255.255.255
        "::/8",  # unspecified, loopback, IPv4-mapped/compatible (a mapped one is checked
        # by its IPv4 address before this list), NAT64 64:ff9b::/96 and 64:ff9b:1::/48
        "100::/64",  # discard-only
        "100:0:0:1::/64",  # dummy prefix
        "2001::/23",  # IETF protocol assignments (Teredo, benchmarking, ORCHID, AS112...)
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4
        "2620:4f:8000::/48",  # direct delegation AS112
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing (SRv6) SIDs
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "ff00::/8",  # multicast
    )
)


class TargetRefused(Exception):
    """The URL may not be a webhook target; the message says why."""


@dataclass(frozen=True)
class Target:
    host: str  # as in the URL: the Host header and the name TLS checks
    addresses: tuple[str, ...]  # every address it resolves to, checked, in the resolver's order


def url_check(url: str) -> tuple[str, int]:
    """The URL's host and port when it is an http(s) URL with a host and a port other than 0.
    Raises TargetRefused."""
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
    if port == 0:
        raise TargetRefused("The URL's port may not be 0.")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def is_public(address: IpAddress) -> bool:
    """False for every address Python's `ipaddress` does not call global (private, loopback,
    link-local, reserved, multicast, unspecified...), for every IANA special-purpose range
    (SPECIAL_PURPOSE_NETWORKS, whatever this Python's release knows of them), and for IPv6
    forms of IPv4 addresses (mapped, 6to4, Teredo) whose IPv4 address is one."""
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
        or any(address in network for network in SPECIAL_PURPOSE_NETWORKS)
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
                # Never which address: the answer would map the service's own network for
                # whoever may register endpoints.
                raise TargetRefused(
                    f"The host {host!r} is or resolves to a private, loopback or otherwise "
                    "non-public address (allowed only with WEBHOOK_ALLOW_PRIVATE=true)."
                )
    return Target(host=host, addresses=tuple(dict.fromkeys(str(a) for a in addresses)))
