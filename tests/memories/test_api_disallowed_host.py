"""A Host header the service does not serve (ALLOWED_HOSTS) answers the API's JSON error on
/api/ paths, also with DEBUG on; elsewhere Django's own 400 stays."""

import pytest

from tests.memories.helpers import assert_error


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/memories"),
        ("post", "/api/auth/token"),
        ("get", "/api/no-such-path"),
        ("get", "/api/docs/"),
    ],
)
def test_a_disallowed_host_answers_400_json_naming_the_host_header(
    api, settings, debug, method, path
):
    settings.DEBUG = debug

    response = getattr(api, method)(path, HTTP_HOST="evil.example")

    error = assert_error(response, 400, "Host")
    assert error["code"] == "disallowed_host"
    assert "evil.example" not in response.content.decode()


def test_an_allowed_host_is_served_as_before(api):
    response = api.get("/api/memories", HTTP_HOST="localhost")

    assert response.status_code == 200
    assert response.json()["data"] == []


def test_outside_the_api_a_disallowed_host_keeps_djangos_answer(client):
    response = client.get("/admin/login/", HTTP_HOST="evil.example")

    assert response.status_code == 400
    assert not response["Content-Type"].startswith("application/json")
