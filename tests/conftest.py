import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from memories.models import User


def make_user(username: str, *, is_staff: bool = False) -> User:
    return User.objects.create_user(username=username, password="pw-" + username, is_staff=is_staff)


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
