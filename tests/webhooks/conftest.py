"""Fixtures of the webhook tests: a receiver, an endpoint of the default tenant pointed at it
(registered by staff through the API) and settings that let deliveries reach 127.0.0.1 and
retry at once."""

import pytest

from tests.conftest import key_client, new_key
from tests.webhooks.receiver import Receiver
from webhooks.models import EventType


@pytest.fixture(autouse=True)
def webhook_settings(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_RETRY_SECONDS = [0.0, 0.0]  # retries due at once: the sweep sends them
    settings.WEBHOOK_TIMEOUT_SECONDS = 5.0
    return settings


@pytest.fixture
def receiver():
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


def register(api, url: str, events=tuple(EventType.values), **fields):
    response = api.post(
        "/api/webhooks", {"url": url, "events": list(events), **fields}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture
def endpoint(staff_api, receiver):
    """An endpoint of the default tenant subscribed to every event, its secret given to the
    receiver."""
    created = register(staff_api, receiver.url)
    receiver.secret = created["secret"]
    return created


@pytest.fixture
def alice(db):
    """A read/write key of the default tenant acting for the end user alice."""
    return key_client(new_key("read", "write"), "alice")
