"""DRF authentication for service keys: `Authorization: Bearer <key>` plus `X-User-Id`.
The rules live in memories.accounts.keys; this adapts them to DRF's interface."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from memories.accounts.keys import Unauthenticated, principal_for
from memories.errors import ServiceError
from memories.models import ApiKeyScope
from ops import timing
from rest.permissions import required_scope


class ApiKeyRequestError(exceptions.APIException):
    """A service error raised while authenticating, kept whole for the exception handler
    (DRF only lets APIException through its authentication step)."""

    def __init__(self, error: ServiceError):
        super().__init__(detail=error.detail, code=error.code)
        self.status_code = error.status_code
        self.service_error = error


def only_reads(request, view) -> bool:
    """Whether the request needs no more than the read scope: GET and HEAD, and the POSTs
    that read (search, the hint, the read tools). Such a request never creates its end user
    (memories.accounts.keys.principal_for): a GET after an erasure must not bring the user back."""
    return required_scope(request, view) == ApiKeyScope.READ


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.strip().lower().startswith("bearer"):
            return None
        view = request.parser_context.get("view") if request.parser_context else None
        try:
            with timing.stage("auth"):
                principal = principal_for(
                    authorization=header,
                    external_id=request.META.get("HTTP_X_USER_ID"),
                    key_acts_as_itself=getattr(view, "key_acts_as_itself", False),
                    creates_user=view is None or not only_reads(request, view),
                )
        except Unauthenticated as error:
            raise exceptions.AuthenticationFailed(error.detail) from None
        except ServiceError as error:
            raise ApiKeyRequestError(error) from None
        return principal.user, principal

    def authenticate_header(self, request):
        return self.keyword


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """The key in the OpenAPI schema: a bearer token; X-User-Id names the end user."""

    target_class = "memories.accounts.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "A service key (manage.py create_api_key). With the header X-User-Id: "
                "<external id> the request acts as that end user, created by its first write "
                "(a read of an unknown id answers no data and creates nothing)."
            ),
        }
