import pytest
from django.conf import settings
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from memories.accounts.keys import api_key_create
from memories.models import User

# Fixtures through which a test reaches the test database.
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}
# Tests that use no database fixture yet need PostgreSQL (they start servers on it).
POSTGRESQL_MARKERS = ("postgres_only", "topology", "fuzz")


def runs_in_the_postgresql_pass(item) -> bool:
    """The test command runs the suite on SQLite, then on PostgreSQL. The second pass leaves
    out what would only repeat the first: tests that reach no database, and the bounded
    schema conformance run, of which the fuzz test (PostgreSQL only) is a far larger one."""
    if any(item.get_closest_marker(name) for name in POSTGRESQL_MARKERS):
        return True
    if item.get_closest_marker("schema_conformance"):
        return False
    return bool(DATABASE_FIXTURES & set(item.fixturenames)) or bool(
        item.get_closest_marker("django_db")
    )


def pytest_collection_modifyitems(config, items):
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        return
    picked = config.args_source == pytest.Config.ArgsSource.ARGS
    if picked or config.getoption("keyword") or config.getoption("markexpr"):
        return  # a run that names its tests gets every one it named
    kept = [item for item in items if runs_in_the_postgresql_pass(item)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


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
    from memories.accounts.tenants import default_tenant

    user.external_id = external_id or user.external_id or user.username
    user.tenant = default_tenant()
    user.save(update_fields=["external_id", "tenant"])
    return user


def new_key(*scopes: str, tenant=None) -> str:
    """A new API key (read and write unless scopes are given); its raw form."""
    _, raw_key = api_key_create(
        name="chat backend", scopes=scopes or ("read", "write"), tenant=tenant
    )
    return raw_key


def key_client(raw_key: str, external_id: str | None = "ext-alice") -> APIClient:
    """A client sending this key, acting for the end user `external_id` (None: no X-User-Id)."""
    client = APIClient()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw_key}"}
    if external_id is not None:
        headers["HTTP_X_USER_ID"] = external_id
    client.credentials(**headers)
    return client


def scoped_client(*scopes: str, external_id: str | None = "ext-alice") -> APIClient:
    """key_client with a new key of these scopes."""
    return key_client(new_key(*scopes), external_id)


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
