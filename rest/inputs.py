"""What every view does with a request's input: ids from the path, the authenticated user,
validation through a serializer (each view of the API, and extraction's)."""

from uuid import UUID

from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request

from memories.errors import NotFound
from memories.models import (
    User,
)


def parse_uuid(raw: str, *, field: str = "id", what: str = "object") -> UUID:
    """Path ids are UUIDs; anything else names no object (404 naming the field)."""
    try:
        return UUID(str(raw))
    except ValueError:
        raise NotFound(f"No {what} with id {raw!r}: ids are UUIDs.", field=field) from None


def caller(request: Request) -> User:
    """The authenticated user making the request. Views reach it only past IsAuthenticated
    (or a key's user), so it is never AnonymousUser; should one slip through, 401."""
    user = request.user
    if not isinstance(user, User):
        raise NotAuthenticated()
    return user


def validated(serializer_class, request, *, data=None, context=None, **kwargs) -> dict:
    serializer = serializer_class(
        data=request.data if data is None else data,
        context={"request": request, **(context or {})},
        **kwargs,
    )
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
