"""GET /api/ and GET /: absolute links to the schema, docs, review pages, admin, MCP and the
API's collections, open to anyone; / is a page of the same links for a browser."""

from urllib.parse import urlsplit

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from memories.api.root import API, PAGES

pytestmark = pytest.mark.django_db

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def every_link(body: dict) -> dict[str, str]:
    return {**body["links"], **body["api"]}


def test_api_root_answers_every_link_absolute_from_the_request():
    response = Client().get("/api/", HTTP_HOST="localhost:8000", secure=True)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["service"] == "Memory service API"
    assert body["version"] == "0.1.0"
    assert set(body["links"]) == set(PAGES)
    assert set(body["api"]) == set(API)
    assert body["links"]["schema"] == "https://localhost:8000/api/schema/"
    assert body["links"]["docs"] == "https://localhost:8000/api/docs/"
    assert body["links"]["review"] == "https://localhost:8000/review/"
    assert body["links"]["admin"] == "https://localhost:8000/admin/"
    # Served beside Django (its ASGI app mounted in the WSGI application): listed only.
    assert body["links"]["mcp"] == "https://localhost:8000/mcp"
    assert body["api"]["memories"] == "https://localhost:8000/api/memories"
    assert body["api"]["memories_search"] == "https://localhost:8000/api/memories/search"
    assert body["api"]["memories_context"] == "https://localhost:8000/api/memories/context"


def test_every_link_but_mcp_leads_somewhere():
    client = Client()
    links = every_link(client.get("/api/").json())
    for name, url in links.items():
        if name == "mcp":
            continue
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc) == ("http", "testserver"), name
        response = client.get(parts.path)
        # Not signed in: the API answers 401, the pages send to the login, POST-only paths
        # answer 405; none is missing.
        assert response.status_code != 404, f"{name}: {url} answers 404"
        assert response.status_code < 500, f"{name}: {url} answers {response.status_code}"


def test_no_credentials_needed_and_wrong_ones_ignored():
    response = Client().get("/api/", HTTP_AUTHORIZATION="Bearer mem_not-a-key")

    assert response.status_code == 200


def test_site_root_answers_json_clients_the_same_json():
    client = Client()
    expected = client.get("/api/").json()

    for accept in ("application/json", "*/*", None):
        headers = {"HTTP_ACCEPT": accept} if accept else {}
        response = client.get("/", **headers)
        assert response.status_code == 200
        assert response["Content-Type"] == "application/json"
        assert response.json() == expected
        assert "Accept" in response["Vary"]


def test_site_root_answers_a_browser_a_page_of_the_same_links_under_the_csp():
    client = Client()
    links = every_link(client.get("/api/").json())

    response = client.get("/", HTTP_ACCEPT=BROWSER_ACCEPT)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    page = response.content.decode()
    for url in links.values():
        assert f'<a href="{url}">' in page
    # Nothing the Content-Security-Policy (no inline script or style) would block.
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "<script" not in page
    assert "style" not in page


@pytest.mark.parametrize("path", ["/api/", "/"])
def test_head_answers_like_get_without_a_body(path):
    response = Client().head(path)

    assert response.status_code == 200
    assert response.content == b""


@pytest.mark.parametrize("path", ["/api/", "/"])
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_other_methods_answer_405_json(path, method):
    # A browser's Accept too: errors are JSON everywhere.
    response = getattr(Client(), method)(path, HTTP_ACCEPT=BROWSER_ACCEPT)

    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "method_not_allowed"
    assert set(response["Allow"].split(", ")) >= {"GET", "HEAD"}


def test_api_root_is_in_the_schema_with_its_answer_and_no_security():
    schema = SchemaGenerator().get_schema(request=None, public=True)

    operation = schema["paths"]["/api/"]["get"]
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"$ref": "#/components/schemas/ServiceRoot"}
    assert "security" not in operation
    properties = schema["components"]["schemas"]["ServiceRoot"]["properties"]
    assert set(properties) == {"service", "version", "links", "api"}
    assert "/" not in schema["paths"]  # the same answer; /api/ documents it
