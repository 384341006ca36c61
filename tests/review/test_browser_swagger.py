"""Swagger UI (/api/docs/) used with a service key in a real headless Chromium against the live
server: Authorize with the key, X-User-Id on GET /api/memories, Try it out, Execute; the answer
shown is that user's memories."""

import json

import pytest

from tests.conftest import key_client, new_key

pytestmark = pytest.mark.django_db(transaction=True)


def test_swagger_authorize_with_a_key_and_x_user_id_lists_that_users_memories(
    browser_page, live_server
):
    raw_key = new_key("read", "write")
    for external_id, value in [("ext-dana", "Lives in Lisbon"), ("ext-omar", "Lives in Cairo")]:
        saved = key_client(raw_key, external_id).post(
            "/api/memories", {"key": "city", "value": value}, format="json"
        )
        assert saved.status_code == 201, saved.content
    page = browser_page
    page.goto(f"{live_server.url}/api/docs/")

    page.click("button.authorize")
    bearer = page.locator(".auth-container form", has_text="ApiKey (http, Bearer)")
    bearer.locator("input[aria-label=auth-bearer-value]").fill(raw_key)
    bearer.locator("button[type=submit]", has_text="Authorize").click()
    bearer.locator("button", has_text="Logout").wait_for()  # authorized
    page.click("button.btn-done")

    operation = page.locator("#operations-memories-memories_list")
    operation.locator(".opblock-summary").click()
    operation.locator("button.try-out__btn").click()
    operation.locator('tr[data-param-name="X-User-Id"] input').fill("ext-dana")
    operation.locator("button.execute").click()

    response = operation.locator(".live-responses-table .response").first
    assert response.locator(".response-col_status").inner_text().strip() == "200"
    body = json.loads(response.locator(".response-col_description pre").first.inner_text())
    assert [(memory["key"], memory["value"]) for memory in body["data"]] == [
        ("city", "Lives in Lisbon")
    ]
    # The request the UI shows sent the key as a bearer token and the user's header.
    curl = operation.locator(".curl-command").inner_text()
    assert f"Authorization: Bearer {raw_key}" in curl
    assert "X-User-Id: ext-dana" in curl
