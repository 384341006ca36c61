"""The SSRF guard: targets that are, or resolve to, private or loopback addresses are refused
when an endpoint is saved and again when a delivery is attempted, unless
WEBHOOK_ALLOW_PRIVATE=true."""

import ipaddress

import pytest
from django.test import override_settings

from tests.webhooks.conftest import register
from webhooks.models import WebhookAttempt, WebhookDelivery
from webhooks.targets import TargetRefused, is_public, resolve

PRIVATE_URLS = [
    "http://10.1.2.3/hooks",
    "http://127.0.0.1:8000/hooks",
    "http://[::1]/hooks",
    "http://localhost/hooks",  # a name that resolves to 127.0.0.1 and ::1
    "http://[::ffff:127.0.0.1]/hooks",  # IPv4-mapped IPv6
    "http://169.254.169.254/latest/meta-data",  # link-local: cloud metadata
    "http://0.0.0.0/",
    "http://[fd00::1]/",
    "http://224.0.0.1/",
    # Special-purpose ranges Python 3.11.7's is_global calls global (the probe's two).
    "http://192.0.0.8/hooks",
    "http://192.88.99.1/hooks",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_private_targets_are_refused_at_create(staff_api, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    response = staff_api.post(
        "/api/webhooks", {"url": url, "events": ["memory.created"]}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert "WEBHOOK_ALLOW_PRIVATE" in response.json()["fields"]["url"][0]


@pytest.mark.parametrize("url", ["http://10.1.2.3/hooks", "http://localhost/hooks"])
def test_private_targets_are_let_through_when_allowed(staff_api, url):
    assert register(staff_api, url, ["memory.created"])["url"] == url


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.215.14", True),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.1.1", False),
        ("127.0.0.1", False),
        ("100.64.0.1", False),  # carrier-grade NAT
        ("::1", False),
        ("::", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:93.184.215.14", True),
        ("2002:0a00:0001::", False),  # 6to4 of 10.0.0.1
        ("fe80::1", False),
        ("ff02::1", False),
        # IANA special-purpose ranges, refused on every Python release whatever its own
        # is_global says of them (3.11.7 calls all but the IPv6 2001: ones global).
        ("192.0.0.8", False),  # dummy address
        ("192.0.0.9", False),  # PCP anycast
        ("192.88.99.1", False),  # deprecated 6to4 relay anycast
        ("192.31.196.1", False),  # AS112-v4
        ("192.52.193.1", False),  # AMT
        ("192.175.48.1", False),  # direct delegation AS112
        ("2620:4f:8000::1", False),  # direct delegation AS112 (IPv6)
        ("64:ff9b::808:808", False),  # NAT64 of 8.8.8.8
        ("5f00::1", False),  # SRv6 SIDs
        ("3fff::1", False),  # documentation
        ("::ffff:192.88.99.1", False),
        ("192.0.1.1", True),  # next to 192.0.0.0/24, not in it
        ("192.88.98.1", True),
    ],
)
def test_which_addresses_are_public(address, public):
    assert is_public(ipaddress.ip_address(address)) is public


def test_every_address_python_does_not_call_global_is_refused():
    """Whatever this Python's is_global says, is_public never says more: the first 64
    addresses of each of Python's own non-global ranges, and of a few more."""
    networks = ["0.0.0.0/8", "192.0.0.0/24", "240.0.0.0/4", "fc00::/7", "2001::/23"]
    for network in map(ipaddress.ip_network, networks):
        for offset in range(64):
            address = network.network_address + offset
            if not address.is_global:
                assert not is_public(address), address


@pytest.mark.parametrize(
    "url", ["http://93.184.215.14:0/hooks", "https://example.com:0/", "http://[2606:2800::1]:0/"]
)
def test_port_0_is_refused(staff_api, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    response = staff_api.post(
        "/api/webhooks", {"url": url, "events": ["memory.created"]}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert "port" in response.json()["fields"]["url"][0]


def test_port_0_is_refused_even_where_private_targets_are_allowed(staff_api):
    response = staff_api.post(
        "/api/webhooks", {"url": "http://127.0.0.1:0/", "events": ["memory.created"]}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert "port" in response.json()["fields"]["url"][0]


def test_the_refusal_of_a_name_does_not_say_what_it_resolves_to(staff_api, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    response = staff_api.post(
        "/api/webhooks",
        {"url": "http://localhost:8000/hooks", "events": ["memory.created"]},
        format="json",
    )
    assert response.status_code == 400, response.json()
    [message] = response.json()["fields"]["url"]
    assert "'localhost'" in message and "WEBHOOK_ALLOW_PRIVATE" in message
    assert "127.0.0.1" not in message and "::1" not in message, message


def test_a_name_is_checked_by_what_it_resolves_to(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(TargetRefused, match="localhost"):
        resolve("http://localhost:9/")
    settings.WEBHOOK_ALLOW_PRIVATE = True
    assert "127.0.0.1" in resolve("http://localhost:9/").addresses


def test_a_delivery_to_a_target_that_became_private_is_refused_and_recorded(
    endpoint, receiver, alice, django_capture_on_commit_callbacks
):
    # The endpoint was saved while allowed; at delivery the guard applies again, as it
    # would to a public name whose DNS now answers a private address.
    with override_settings(WEBHOOK_ALLOW_PRIVATE=False):
        with django_capture_on_commit_callbacks(execute=True):
            response = alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")
        assert response.status_code == 201
    delivery = WebhookDelivery.objects.get(event_type="memory.created")
    attempt = WebhookAttempt.objects.get(delivery=delivery)
    assert attempt.outcome == "refused" and attempt.status_code is None
    assert "127.0.0.1" in attempt.error and "WEBHOOK_ALLOW_PRIVATE" in attempt.error  # the URL's
    assert delivery.status == "pending" and delivery.failures == 1
    assert receiver.received == [] and not receiver.arrived.is_set()
