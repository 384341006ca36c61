"""Odd bytes in input answer 4xx naming the body or line, never 500 (issue 22's probe): lone
surrogates (JSON escapes \\ud800-\\udfff without their pair) as field names, choice values or
text, in every JSON body, tool arguments given as a string, and import lines."""

import io
import json

import pytest

from memories.models import Memory
from rest.parsers import holds_lone_surrogate
from tests.memories.helpers import assert_error

BODIES = [
    ("/api/memories", b'{"key": "a", "value": "b", "\\ud800": 1}'),
    ("/api/memories", b'{"key": "a", "value": "b", "scope": "\\ud800"}'),
    ("/api/memories", b'{"key": "a", "value": "Likes \\udfff tea"}'),
    ("/api/memories/batch", b'{"memories": [{"key": "a", "value": "b", "\\udfff": 1}]}'),
    ("/api/memories/context", b'{"query": "x", "\\ud800x": 1}'),
    ("/api/tools/memory_save", b'{"key": "a", "value": "b", "confidence": 1, "scope": "\\ud800"}'),
    ("/api/topics", b'{"title": "t", "\\ud800": 1}'),
]


@pytest.mark.parametrize(("path", "body"), BODIES)
def test_a_lone_surrogate_in_a_json_body_is_a_400_naming_the_body(api, path, body):
    response = api.generic("POST", path, body, content_type="application/json")

    error = assert_error(response, 400, "body")
    assert "lone surrogate" in error["detail"]
    assert Memory.objects.count() == 0


def test_tool_arguments_given_as_a_json_string_are_checked_too(api):
    arguments = '{"key": "a", "value": "\\ud800", "confidence": 1}'

    response = api.post(
        "/api/tools/memory_save", json.dumps(arguments), content_type="application/json"
    )

    assert_error(response, 400, "body")
    assert Memory.objects.count() == 0


def test_an_import_line_with_a_lone_surrogate_is_reported_and_the_rest_imported(api):
    body = b'{"key": "a", "value": "\\ud800"}\n{"key": "b", "value": "fine"}\n'

    response = api.post("/api/memories/import", body, content_type="application/x-ndjson")

    assert response.status_code == 200, response.content
    assert response.json()["created"] == 1
    [error] = response.json()["errors"]
    assert error["line"] == 1 and "lone surrogate" in error["detail"]


def test_paired_surrogates_are_ordinary_text(api):
    response = api.generic(
        "POST",
        "/api/memories",
        b'{"key": "mood", "value": "Happy \\ud83d\\ude00"}',
        content_type="application/json",
    )

    assert response.status_code == 201
    assert response.json()["value"] == "Happy \U0001f600"


def test_the_check_walks_deep_json_without_recursion():
    deep: object = "\ud800"
    for _ in range(5000):
        deep = [deep]

    assert holds_lone_surrogate({"a": deep})
    assert not holds_lone_surrogate({"a": [["ok"]], "b": {"c": "fine"}})


def test_a_nul_in_a_task_id_or_external_id_filter_is_a_4xx(api, staff_api):
    run = api.get("/api/extraction-runs/abc\x00def")
    users = staff_api.get("/api/users", {"external_id": "a\x00b"})

    assert_error(run, 404, "task_id")
    assert_error(users, 400, "external_id")


def post_chunked(client, path: str, body: bytes, *, terminated: bool = True):
    """A JSON body sent with Transfer-Encoding: chunked, as gunicorn hands it over (no
    Content-Length; the de-chunked input marked as terminated)."""
    extra = {"wsgi.input": io.BytesIO(body)}
    if terminated:
        extra["wsgi.input_terminated"] = True
    return client.post(
        path,
        content_type="application/json",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **extra,
    )


def test_a_chunked_json_body_is_read(api):
    response = post_chunked(api, "/api/memories", b'{"key": "tea", "value": "Likes green tea"}')

    assert response.status_code == 201, response.content
    assert response.json()["value"] == "Likes green tea"


def test_a_chunked_json_body_over_the_limit_is_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    body = json.dumps({"key": "tea", "value": "x" * 200}).encode()

    assert_error(post_chunked(api, "/api/memories", body), 413, "body")
    assert Memory.objects.count() == 0


def test_a_chunked_body_the_server_did_not_dechunk_is_411(api):
    response = post_chunked(api, "/api/memories", b'{"key": "a", "value": "b"}', terminated=False)

    assert_error(response, 411, "body")
