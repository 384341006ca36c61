"""The OpenAPI schema's error answers. One AutoSchema (REST_FRAMEWORK DEFAULT_SCHEMA_CLASS)
adds to every operation the errors it can give, each as the one `Error` shape of
rest.errors: which ones follows from the operation's method, path, permissions and
throttles, plus two short tables below (operations that can conflict, operations that embed)."""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny


class ErrorSerializer(serializers.Serializer):
    """{"code", "detail", "fields"}: the body of every API error (rest.errors)."""

    code = serializers.CharField(help_text="Stable code: invalid, not_found, throttled, …")
    detail = serializers.CharField(help_text="One readable sentence saying how to fix it.")
    # A declared field, which the metaclass moves into the fields; the stubs take it for
    # an override of Serializer.fields.
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Each offending field (or body, a header) with its messages; may be empty.",
    )


# Operations whose service raises Conflict: a memory deleted or reviewed meanwhile (approve,
# reject, edit, delete, memory_forget), an external_id taken, an import racing another, a
# consolidation proposal decided already or outgrown by its memories.
CONFLICT_OPERATIONS = {
    "retention_rules_create",
    "retention_rules_partial_update",
    "memories_update",
    "memories_partial_update",
    "memories_destroy",
    "memories_approve_create",
    "memories_reject_create",
    "admin_memories_bulk_approve_create",
    "admin_memories_bulk_reject_create",
    "memories_import_create",
    "users_create",
    "tools_call",
    "admin_consolidation_proposals_approve_create",
    "admin_consolidation_proposals_reject_create",
}
# Operations whose query parameters name an object (a tenant, a project): 404 when none is.
QUERY_OBJECT_OPERATIONS = {"extraction_settings_retrieve", "extraction_settings_update"}
# Operations that embed text (a memory or a query): 503 when the embedder is unavailable.
EMBEDDING_OPERATIONS = {
    "memories_create",
    "memories_batch_create",
    "memories_update",
    "memories_partial_update",
    "memories_search_retrieve",
    "memories_context_create",
    "memories_restore_create",
    "memories_import_create",
    "admin_consolidation_proposals_approve_create",
    "tools_call",
}
# Logins are throttled by django-axes (config/login_throttle.py), not by a DRF throttle.
LOGIN_PATHS = {"/api/auth/token"}

DESCRIPTIONS = {
    "400": "Invalid input (each field named in `fields`), unreadable JSON, or a wrong Host.",
    "401": "No credentials, or wrong ones.",
    "403": "Not allowed: the key lacks the scope this needs, or the user is not staff.",
    "404": "No object with this id that the caller may see, or a page past the last one.",
    "409": "The object changed meanwhile (deleted, already reviewed) or exists already.",
    "413": "The request body is larger than the service accepts.",
    "415": "The body is not of the media type this operation reads.",
    "429": "Too many requests; wait as long as Retry-After says.",
    "503": "The embedding service is unavailable; try again.",
}


class ErrorsAutoSchema(AutoSchema):
    def error_statuses(self) -> list[str]:
        """The 4xx/5xx this operation can answer, besides its own success codes."""
        operation_id = self.get_operation_id()
        statuses = ["400"]  # validation, parse errors; a disallowed Host on any path
        # A composed entry (IsAuthenticated | IsAdminUser) is an operand holder, not a class.
        if not any(
            isinstance(permission, type) and issubclass(permission, AllowAny)
            for permission in self.view.permission_classes
        ):
            statuses += ["401", "403"]
        if "{" in self.path or self._is_paginated() or operation_id in QUERY_OBJECT_OPERATIONS:
            statuses.append("404")  # no such object; a page past the last
        if operation_id in CONFLICT_OPERATIONS:
            statuses.append("409")
        if self.method in ("POST", "PUT", "PATCH"):
            statuses.append("413")  # the middleware checks Content-Length on every body
            if self.get_request_serializer() is not None:
                statuses.append("415")
        if self.view.throttle_classes or self.path in LOGIN_PATHS:
            statuses.append("429")
        if operation_id in EMBEDDING_OPERATIONS:
            statuses.append("503")
        return statuses

    def _is_paginated(self) -> bool:
        return self.method == "GET" and self._is_list_view() and self._get_paginator() is not None

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for status in self.error_statuses():
            if status not in responses:
                error = OpenApiResponse(ErrorSerializer, description=DESCRIPTIONS[status])
                responses[status] = self._get_response_for_code(error, status)
        return responses


def oas30(schema):
    """A JSON schema (the tools' strict-mode one, which types an optional argument as
    ["number", "null"]) in OpenAPI 3.0's terms: one type and `nullable`, and no empty
    `required` (an object without arguments: 3.0 wants at least one name there)."""
    if isinstance(schema, list):
        return [oas30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {name: oas30(value) for name, value in schema.items()}
    if isinstance(schema.get("type"), list):
        types = [kind for kind in schema["type"] if kind != "null"]
        converted["type"] = types[0]
        if "null" in schema["type"]:
            converted["nullable"] = True
    if schema.get("type") == "object" and schema.get("required") == []:
        del converted["required"]
    return converted


def tool_arguments_schema() -> dict:
    """The body of POST /api/tools/{name}: the named tool's arguments object, or that object
    as a JSON string (as models produce it). Optional arguments may be left out (as for MCP),
    or sent as null as strict function calling sends them."""
    from memories import tools

    return {
        "anyOf": [
            {**oas30(tool.input_schema), "title": tool.name, "description": tool.description}
            for tool in tools.TOOLS.values()
        ]
        + [{"type": "string", "description": "The arguments object as a JSON string."}]
    }
