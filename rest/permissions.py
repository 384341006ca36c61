"""What a service key may do: each request needs one scope. A user's own token
or session has every scope; what the user may then do is the services' business."""

from rest_framework.permissions import SAFE_METHODS, BasePermission

from memories.accounts.keys import Principal
from memories.errors import Forbidden
from memories.models import ApiKeyScope


def required_scope(request, view) -> str:
    """The view's `key_scope` (a scope, or a function of the request), else read for safe
    methods and write for the rest."""
    scope = getattr(view, "key_scope", None)
    if callable(scope):
        scope = scope(request)
    if scope:
        return scope
    return ApiKeyScope.READ if request.method in SAFE_METHODS else ApiKeyScope.WRITE


class KeyHasScope(BasePermission):
    def has_permission(self, request, view) -> bool:
        principal = request.auth
        if not isinstance(principal, Principal):
            return True
        scope = required_scope(request, view)
        if not principal.has_scope(scope):
            raise Forbidden(
                f"This API key lacks the {str(scope)!r} scope that this request needs.",
                field="scope",
                code="missing_scope",
            )
        return True
