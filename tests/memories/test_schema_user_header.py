"""The served OpenAPI schema declares X-User-Id as a header parameter of every operation that
acts for an end user, and of no other, and offers the key as the bearer token the API reads."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

# Operations where a service key acts as its own account (key_acts_as_itself), or that read
# no key at all: X-User-Id means nothing there.
WITHOUT_USER_HEADER = (
    "/api/admin/",
    "/api/users",
    "/api/personas",
    "/api/auth/token",
    "/api/webhooks",
    "/api/retention-rules",
    "/api/extraction-settings",
)
# Paths outside that set which must carry it; a schema that lost a family fails here.
USER_PATHS = (
    "/api/memories",
    "/api/memories/{id}",
    "/api/memories/search",
    "/api/memories/context",
    "/api/memories/batch",
    "/api/memories/export",
    "/api/memories/import",
    "/api/memories/{id}/restore",
    "/api/memories/extract/{topic_id}",
    "/api/tools",
    "/api/tools/{name}",
    "/api/topics",
    "/api/topics/{id}/messages",
    "/api/work-sessions",
    "/api/work-sessions/{id}/messages",
    "/api/projects",
    "/api/extraction-runs",
    "/api/extraction-runs/{task_id}",
    "/api/me",
    "/api/me/erase",
)


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        response = Client().get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def user_headers(operation: dict) -> list[dict]:
    return [
        parameter
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "header" and parameter["name"].lower() == "x-user-id"
    ]


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_every_user_operation_has_the_header_and_no_other(schema):
    with_header, without_header = set(), set()
    for path, method, operation in operations(schema):
        acts_for_end_user = path != "/api/" and not path.startswith(WITHOUT_USER_HEADER)
        assert len(user_headers(operation)) == int(acts_for_end_user), (method, path)
        (with_header if acts_for_end_user else without_header).add(path)

    assert set(USER_PATHS) <= with_header
    assert {"/api/users", "/api/admin/memories/pending", "/api/auth/token"} <= without_header


def test_the_header_says_when_it_is_required_and_when_ignored(schema):
    (header,) = user_headers(schema["paths"]["/api/memories"]["get"])

    assert not header.get("required", False)  # a user's own token or session does without
    assert header["schema"] == {"type": "string", "minLength": 1, "maxLength": 255}
    assert "Required with a service key" in header["description"]
    assert "Ignored with a user's token" in header["description"]


def test_authorize_takes_the_key_as_the_bearer_token_the_api_reads(schema):
    scheme = schema["components"]["securitySchemes"]["ApiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert {"ApiKey": []} in schema["paths"]["/api/memories"]["get"]["security"]
