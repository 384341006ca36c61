"""Authentication: tokens, sessions, 401 for anonymous callers; the OpenAPI schema and docs."""

import json

import pytest
import yaml
from rest_framework.test import APIClient

from memories.models import Memory
from tests.memories.helpers import assert_error, make_memory


def test_it_exchanges_username_and_password_for_a_working_token(anon_api, owner):
    make_memory(owner)

    response = anon_api.post(
        "/api/auth/token", {"username": "owner", "password": "pw-owner"}, format="json"
    )

    assert response.status_code == 200, response.json()
    token = response.json()["token"]
    assert isinstance(token, str) and token
    client = APIClient()
    listing = client.get("/api/memories", HTTP_AUTHORIZATION=f"Token {token}")
    assert listing.status_code == 200
    assert listing.json()["count"] == 1


def test_the_same_user_gets_the_same_token_twice(anon_api, owner):
    body = {"username": "owner", "password": "pw-owner"}

    first = anon_api.post("/api/auth/token", body, format="json").json()["token"]
    second = anon_api.post("/api/auth/token", body, format="json").json()["token"]

    assert first == second


@pytest.mark.parametrize(
    "body",
    [
        {"username": "owner", "password": "wrong"},
        {"username": "nobody", "password": "pw-owner"},
        {"username": "owner", "password": ""},
    ],
)
def test_it_refuses_wrong_credentials(anon_api, owner, body):
    response = anon_api.post("/api/auth/token", body, format="json")

    error = assert_error(response, 400)
    assert error["fields"]
    assert "token" not in response.json()


@pytest.mark.parametrize(
    ("body", "field"),
    [({"password": "pw-owner"}, "username"), ({"username": "owner"}, "password")],
)
def test_it_names_a_missing_credential(anon_api, owner, body, field):
    assert_error(anon_api.post("/api/auth/token", body, format="json"), 400, field)


def test_it_refuses_a_token_for_an_inactive_user(anon_api, owner):
    owner.is_active = False
    owner.save()

    response = anon_api.post(
        "/api/auth/token", {"username": "owner", "password": "pw-owner"}, format="json"
    )

    assert_error(response, 400)


def test_it_answers_401_for_a_bad_token(owner):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    assert_error(client.get("/api/memories"), 401)


def test_a_browser_session_is_accepted(owner):
    make_memory(owner)
    client = APIClient()
    client.force_login(owner)

    response = client.get("/api/memories")

    assert response.status_code == 200
    assert response.json()["count"] == 1


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/memories"),
        ("post", "/api/memories"),
        ("get", "/api/memories/count"),
        ("get", "/api/memories/00000000-0000-0000-0000-000000000000"),
        ("patch", "/api/memories/00000000-0000-0000-0000-000000000000"),
        ("delete", "/api/memories/00000000-0000-0000-0000-000000000000"),
        ("post", "/api/memories/00000000-0000-0000-0000-000000000000/approve"),
        ("get", "/api/memories/00000000-0000-0000-0000-000000000000/history"),
        ("get", "/api/admin/memories/pending"),
        ("post", "/api/admin/memories/bulk-approve"),
        ("get", "/api/topics"),
        ("post", "/api/topics"),
        ("get", "/api/work-sessions"),
        ("post", "/api/projects"),
        ("get", "/api/personas"),
        ("post", "/api/personas"),
    ],
)
def test_an_anonymous_request_answers_401(db, anon_api, method, path):
    response = getattr(anon_api, method)(path, {"key": "k", "value": "v"}, format="json")

    assert_error(response, 401)
    assert not Memory.objects.exists()


def test_an_anonymous_request_cannot_touch_an_existing_memory(anon_api, owner):
    memory = make_memory(owner)

    assert_error(anon_api.get(f"/api/memories/{memory.id}"), 401)
    assert_error(anon_api.delete(f"/api/memories/{memory.id}"), 401)

    memory.refresh_from_db()
    assert memory.deleted_at is None


# --- OpenAPI ------------------------------------------------------------------------------------


def test_the_schema_is_an_openapi_3_document_listing_the_memory_paths(api):
    response = api.get("/api/schema/")

    assert response.status_code == 200
    document = yaml.safe_load(response.content)
    assert str(document["openapi"]).startswith("3.")
    assert "/api/memories" in document["paths"]
    assert {"get", "post"} <= set(document["paths"]["/api/memories"])
    assert "/api/memories/{id}/history" in document["paths"]
    assert "/api/admin/memories/bulk-approve" in document["paths"]


def test_the_schema_is_also_available_as_json(api):
    response = api.get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    document = json.loads(response.content)
    assert str(document["openapi"]).startswith("3.")
    assert "/api/memories" in document["paths"]


def test_the_docs_page_is_html(api):
    response = api.get("/api/docs/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    # Swagger UI's start-up script is served apart from the page (no inline script, for the
    # Content-Security-Policy); it loads the schema.
    assert b'<script src="/api/docs/?script="></script>' in response.content
    script = api.get("/api/docs/", {"script": ""})
    assert script["Content-Type"].startswith("application/javascript")
    assert b"/api/schema/" in script.content


def _schema(api) -> dict:
    return json.loads(api.get("/api/schema/", {"format": "json"}).content)


def test_the_schema_documents_search_as_data_and_pending_as_a_page(api):
    schemas = _schema(api)["components"]["schemas"]
    paths = _schema(api)["paths"]

    search = paths["/api/memories/search"]["get"]["responses"]["200"]
    ref = search["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert schemas[ref]["properties"]["data"]["type"] == "array"
    pending = paths["/api/admin/memories/pending"]["get"]["responses"]["200"]
    ref = pending["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(schemas[ref]["required"]) == {"data", "count", "next", "previous"}


def test_every_operation_documents_its_errors_in_the_one_error_shape(api):
    document = _schema(api)
    operations = [
        (path, method, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]

    assert set(document["components"]["schemas"]["Error"]["required"]) == {
        "code",
        "detail",
        "fields",
    }
    for path, method, operation in operations:
        responses = operation["responses"]
        assert "400" in responses, (method, path)
        # Logging in and the list of links need no credentials, so nothing refuses them.
        if path not in ("/api/auth/token", "/api/"):
            assert {"401", "403"} <= set(responses), (method, path)
        for status, response in responses.items():
            if status >= "400":
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (method, path, status)
    assert "429" in document["paths"]["/api/auth/token"]["post"]["responses"]
    assert "429" in document["paths"]["/api/memories/extract/{topic_id}"]["post"]["responses"]
    assert "409" in document["paths"]["/api/memories/{id}/approve"]["post"]["responses"]
    assert "503" in document["paths"]["/api/memories/search"]["get"]["responses"]
    assert len({operation["operationId"] for _, _, operation in operations}) == len(operations)
