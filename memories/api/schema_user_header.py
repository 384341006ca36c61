"""X-User-Id in the OpenAPI schema: a header parameter of every operation that acts for an end
user, so a service key can be used from Swagger UI (Authorize with the key, then the user's id
in the operation's X-User-Id field).

Which operations follows the rule memories.accounts.authentication applies: the header is read by
ApiKeyAuthentication, except on views that set `key_acts_as_itself` (the review and user
administration endpoints act as the key's own account)."""

from drf_spectacular.utils import OpenApiParameter

from memories.accounts.authentication import ApiKeyAuthentication
from memories.accounts.keys import EXTERNAL_ID_MAX_LENGTH
from memories.api.schema import ErrorsAutoSchema

USER_HEADER = "X-User-Id"

USER_HEADER_PARAMETER = OpenApiParameter(
    USER_HEADER,
    {"type": "string", "minLength": 1, "maxLength": EXTERNAL_ID_MAX_LENGTH},
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "The end user this request acts for: your own id for them (1 to "
        f"{EXTERNAL_ID_MAX_LENGTH} printable characters). Required with a service key "
        "(Authorization: Bearer mem_…), which then acts as that user: created by its first "
        "write unless AUTO_PROVISION_USERS is off, while a read of an unknown id answers no "
        "data and creates nothing; a key with the review scope may leave it out to "
        "act as its own staff account. Ignored with a user's token (Authorization: Token …) "
        "or a signed-in session, which act as their own user."
    ),
)


def acts_for_end_user(view) -> bool:
    """Whether a service key on this view acts as the end user X-User-Id names."""
    reads_keys = any(
        issubclass(authenticator, ApiKeyAuthentication)
        for authenticator in view.authentication_classes
    )
    return reads_keys and not getattr(view, "key_acts_as_itself", False)


class UserHeaderAutoSchema(ErrorsAutoSchema):
    """The API's AutoSchema (REST_FRAMEWORK DEFAULT_SCHEMA_CLASS): the error answers of
    ErrorsAutoSchema, and X-User-Id on the operations that act for an end user."""

    def get_override_parameters(self):
        parameters = super().get_override_parameters()
        if acts_for_end_user(self.view):
            return [*parameters, USER_HEADER_PARAMETER]
        return parameters
