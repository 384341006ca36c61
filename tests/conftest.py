import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from memories.models import User


@pytest.fixture(autouse=True)
def _empty_cache():
    """Login failure counts and API throttle counts live in the cache (local memory in
    tests): each test starts with none, whatever ran before it."""
    cache.clear()
    yield
    cache.clear()


def make_user(username: str, *, is_staff: bool = False) -> User:
    return User.objects.create_user(username=username, password="pw-" + username, is_staff=is_staff)


def end_user(user: User, external_id: str | None = None) -> User:
    """Make a user an end user of the default tenant (as a key's X-User-Id creates them), so
    the default tenant's review keys administer it."""
    from memories.api_keys import default_tenant

    user.external_id = external_id or user.external_id or user.username
    user.tenant = default_tenant()
    user.save(update_fields=["external_id", "tenant"])
    return user


def client_for(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def owner(db) -> User:
    return make_user("owner")


@pytest.fixture
def other(db) -> User:
    return make_user("other")


@pytest.fixture
def staff(db) -> User:
    return make_user("staff", is_staff=True)


@pytest.fixture
def api(owner) -> APIClient:
    """An API client authenticated (by token) as `owner`."""
    return client_for(owner)


@pytest.fixture
def other_api(other) -> APIClient:
    return client_for(other)


@pytest.fixture
def staff_api(staff) -> APIClient:
    return client_for(staff)


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()


@pytest.fixture
def fake_openai():
    """The stand-in model provider on 127.0.0.1 (see tests/fake_openai.py)."""
    from tests.fake_openai import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def openai_embedder(settings, fake_openai):
    """EMBEDDER=openai pointed at the fake provider, for the duration of one test."""
    settings.EMBEDDER = "openai"
    settings.EMBEDDING_BASE_URL = fake_openai.base_url
    settings.EMBEDDING_API_KEY = "test-key"
    settings.EMBEDDING_MODEL = "fake-embedding"
    settings.EMBEDDING_DIMENSIONS = 384
    return fake_openai


@pytest.fixture
def no_embedder(settings):
    """EMBEDDER=none: recall by keyword and confidence."""
    settings.EMBEDDER = "none"
