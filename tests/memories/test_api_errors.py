"""Bad input of every kind: a 4xx JSON error naming the field, and nothing written."""

import json

import pytest

from tests.memories.helpers import NOTHING_STORED, assert_error, make_memory, stored_rows

URL = "/api/memories"


def post_raw(client, body: str | bytes, content_type: str = "application/json"):
    return client.post(URL, body, content_type=content_type)


@pytest.mark.parametrize(
    "raw",
    [
        '{"key": "k", "value": "v"',
        "{'key': 'k', 'value': 'v'}",
        '{"key": "k", "value": "v",}',
        "not json at all",
        '{"key": "k", "value": "v", "importance": NaN}',
        b'{"key": "k", "value": "\xff\xfe"}',
    ],
)
def test_it_rejects_malformed_json_naming_the_body(api, raw):
    response = post_raw(api, raw)

    assert_error(response, 400, "body")
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_json_nested_too_deeply_naming_the_body(api):
    raw = '{"key": "k", "value": "v", "category": ' + "[" * 50_000 + "]" * 50_000 + "}"

    response = post_raw(api, raw)

    assert_error(response, 400, "body")
    assert stored_rows() == NOTHING_STORED


@pytest.mark.parametrize("raw", ["[]", '["k", "v"]', '"key"', "42", "true", "null"])
def test_it_rejects_json_that_is_not_an_object(api, raw):
    response = post_raw(api, raw)

    body = assert_error(response, 400)
    assert set(body["fields"]) & {"body", "non_field_errors"}, body
    assert stored_rows() == NOTHING_STORED


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize("raw", ['["value", "x"]', '"x"', "{broken"])
def test_it_rejects_an_edit_body_that_is_not_a_json_object(api, owner, method, raw):
    memory = make_memory(owner)

    response = getattr(api, method)(f"{URL}/{memory.id}", raw, content_type="application/json")

    body = assert_error(response, 400)
    assert set(body["fields"]) & {"body", "non_field_errors"}, body
    memory.refresh_from_db()
    assert memory.value == "Go with Gin"


def test_it_rejects_an_empty_body_naming_the_missing_fields(api):
    response = post_raw(api, "")

    body = assert_error(response, 400)
    assert {"key", "value"} <= set(body["fields"]), body
    assert stored_rows() == NOTHING_STORED


def test_it_rejects_a_body_that_is_not_json(api):
    response = post_raw(api, "key=k&value=v", content_type="application/x-www-form-urlencoded")

    assert_error(response, 415, "body")
    assert stored_rows() == NOTHING_STORED


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"value": "v"}, "key"),
        ({"key": "k"}, "value"),
        ({"key": "", "value": "v"}, "key"),
        ({"key": "   ", "value": "v"}, "key"),
        ({"key": "k", "value": ""}, "value"),
        ({"key": "k", "value": " \n "}, "value"),
        ({"key": None, "value": "v"}, "key"),
        ({"key": ["k"], "value": "v"}, "key"),
        ({"key": {"k": 1}, "value": "v"}, "key"),
        ({"key": "k", "value": True}, "value"),
        ({"key": "k", "value": ["v"]}, "value"),
        ({"key": "k", "value": "v", "category": ["c"]}, "category"),
        ({"key": "k", "value": "v", "category": None}, "category"),
        ({"key": "k", "value": "v", "scope": "everyone"}, "scope"),
        ({"key": "k", "value": "v", "scope": "USER"}, "scope"),
        ({"key": "k", "value": "v", "scope": 1}, "scope"),
        ({"key": "k", "value": "v", "scope": None}, "scope"),
        ({"key": "k", "value": "v", "improtance": 0.7}, "improtance"),
        ({"key": "k", "value": "v", "source": "tool"}, "source"),
        ({"key": "k", "value": "v", "status": "pending_review"}, "status"),
        ({"key": "k", "value": "v", "owner_id": "x"}, "owner_id"),
        ({"key": "k", "value": "v", "project_id": "not-a-uuid"}, "project_id"),
        ({"key": "k", "value": "v", "persona_id": "12345"}, "persona_id"),
        ({"key": "k", "value": "v", "source_channel_id": "nope"}, "source_channel_id"),
        ({"key": "k", "value": "v", "source_channel_id": ["x"]}, "source_channel_id"),
        ({"key": "k" * 201, "value": "v"}, "key"),
        ({"key": "k", "value": "v" * 4001}, "value"),
        ({"key": "k", "value": "v", "category": "c" * 101}, "category"),
        ({"key": "k", "value": "v", "importance": "0.5abc"}, "importance"),
        ({"key": "k", "value": "v", "confidence": {"x": 1}}, "confidence"),
        ({"key": "k\x00", "value": "v"}, "key"),
        ({"key": "k", "value": "v\x00"}, "value"),
    ],
)
def test_it_rejects_a_bad_field_and_writes_nothing(api, body, field):
    response = api.post(URL, body, format="json")

    assert_error(response, 400, field)
    assert stored_rows() == NOTHING_STORED


@pytest.mark.parametrize("field", ["source_channel_id", "project_id", "persona_id"])
@pytest.mark.parametrize("bad", [42, True])
def test_it_rejects_a_json_number_or_boolean_as_a_uuid(api, field, bad):
    response = api.post(URL, {"key": "k", "value": "v", field: bad}, format="json")

    assert_error(response, 400, field)
    assert stored_rows() == NOTHING_STORED


def test_it_accepts_the_longest_allowed_key_value_and_category(api):
    body = {"key": "k" * 200, "value": "v" * 4000, "category": "c" * 100}

    response = api.post(URL, body, format="json")

    assert response.status_code == 201, response.json()
    assert stored_rows()["memories"] == 1


def test_it_answers_413_for_a_body_over_one_mebibyte(api):
    raw = json.dumps({"key": "k", "value": "v" * (1024 * 1024)})

    response = post_raw(api, raw)

    assert_error(response, 413, "body")
    assert stored_rows() == NOTHING_STORED


def test_it_answers_413_for_an_oversized_edit(api, owner):
    memory = make_memory(owner)
    raw = json.dumps({"value": "v" * (1024 * 1024 + 1)})

    response = api.patch(f"{URL}/{memory.id}", raw, content_type="application/json")

    assert_error(response, 413, "body")
    memory.refresh_from_db()
    assert memory.value == "Go with Gin"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/memories/not-a-uuid"),
        ("get", "/api/memories/123"),
        ("patch", "/api/memories/not-a-uuid"),
        ("put", "/api/memories/not-a-uuid"),
        ("delete", "/api/memories/not-a-uuid"),
        ("post", "/api/memories/not-a-uuid/approve"),
        ("post", "/api/memories/not-a-uuid/reject"),
        ("get", "/api/memories/not-a-uuid/history"),
        ("get", "/api/topics/not-a-uuid"),
        ("get", "/api/topics/not-a-uuid/messages"),
        ("post", "/api/topics/not-a-uuid/messages"),
        ("get", "/api/work-sessions/not-a-uuid"),
        ("post", "/api/work-sessions/not-a-uuid/messages"),
        ("get", "/api/projects/not-a-uuid"),
        ("get", "/api/personas/not-a-uuid"),
    ],
)
def test_a_non_uuid_in_the_path_answers_404_naming_the_id(api, method, path):
    response = getattr(api, method)(path, {"value": "x"}, format="json")

    assert_error(response, 404, "id")


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/memories?project_id=nope", "project_id"),
        ("/api/memories?persona_id=12", "persona_id"),
    ],
)
def test_a_non_uuid_in_the_query_answers_400_naming_it(api, path, field):
    assert_error(api.get(path), 400, field)


def test_a_wrong_method_answers_json(api):
    assert_error(api.delete(URL), 405)


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "path",
    [
        "/api/nope",
        "/api/nope/",  # /api/ itself lists the links (test_api_root.py)
        "/api/memories/1/2/3",
        "/api/memories/00000000-0000-0000-0000-000000000000/nope",
    ],
)
def test_an_unknown_api_path_answers_json_404(api, settings, debug, path):
    settings.DEBUG = debug

    assert_error(api.get(path), 404)
    assert_error(api.post(path, {}, format="json"), 404)


@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_api_path_answers_json_without_credentials(anon_api, settings, debug):
    settings.DEBUG = debug

    response = anon_api.get("/api/nope")

    assert response.status_code in (401, 404)
    assert_error(response, response.status_code)


@pytest.mark.parametrize("debug", [False, True])
def test_errors_stay_json_in_debug_mode(api, owner, settings, debug):
    settings.DEBUG = debug
    memory = make_memory(owner)

    assert_error(post_raw(api, "{broken"), 400, "body")
    assert_error(api.get("/api/memories/not-a-uuid"), 404, "id")
    assert_error(api.post(f"{URL}/{memory.id}/approve"), 409)
    assert_error(api.delete(URL), 405)
    assert_error(post_raw(api, json.dumps({"key": "k", "value": "v" * 1_100_000})), 413)


def test_a_trailing_slash_answers_json(api, owner):
    make_memory(owner)

    response = api.get("/api/memories/")

    assert response["Content-Type"].startswith("application/json")
    if response.status_code == 200:
        assert len(response.json()["data"]) == 1
    else:
        assert_error(response, 404)
