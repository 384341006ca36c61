"""Every list endpoint refuses query parameters it does not take with a 400 naming each one,
as search does: `?stauts=archived` must not answer the active list as if it were filtered.
Its filters, page, page_size and format stay accepted."""

import pytest

from memories.models import Memory, Status
from tests.memories.helpers import assert_error


@pytest.fixture
def carriers(api):
    topic = api.post("/api/topics", {"title": "t"}, format="json").json()["id"]
    session = api.post("/api/work-sessions", {}, format="json").json()["id"]
    memory = api.post(
        "/api/memories", {"key": "city", "value": "Lives in Lisbon"}, format="json"
    ).json()["id"]
    return {"topic": topic, "session": session, "memory": memory}


def own_lists(carriers) -> list[str]:
    return [
        "/api/memories",
        f"/api/memories/{carriers['memory']}/history",
        "/api/topics",
        f"/api/topics/{carriers['topic']}/messages",
        "/api/work-sessions",
        f"/api/work-sessions/{carriers['session']}/messages",
        "/api/projects",
        "/api/personas",
        "/api/extraction-runs",
    ]


STAFF_LISTS = ["/api/users", "/api/admin/memories/pending", "/api/admin/consolidation-proposals"]


def test_a_misspelt_filter_of_the_memory_list_is_a_400_naming_it(api, owner, carriers):
    Memory.objects.filter(user=owner).update(status=Status.ARCHIVED)

    body = assert_error(api.get("/api/memories?stauts=archived"), 400, "stauts")

    assert "status" in body["fields"]["stauts"][0]  # it says what the list takes


def test_every_unknown_parameter_is_named(api, carriers):
    body = assert_error(api.get("/api/memories?stauts=archived&sort=new&status=active"), 400)

    assert set(body["fields"]) == {"sort", "stauts"}


def test_every_own_list_refuses_an_unknown_parameter(api, carriers):
    for path in own_lists(carriers):
        assert_error(api.get(path, {"bogus": "1"}), 400, "bogus")


def test_every_staff_list_refuses_an_unknown_parameter(staff_api):
    for path in STAFF_LISTS:
        assert_error(staff_api.get(path, {"bogus": "1"}), 400, "bogus")


def test_known_filters_and_pagination_and_format_stay_accepted(api, staff_api, owner, carriers):
    Memory.objects.filter(user=owner).update(status=Status.ARCHIVED)

    archived = api.get("/api/memories", {"status": "archived", "page": 1, "page_size": 5})
    assert archived.status_code == 200, archived.content[:300]
    assert [m["id"] for m in archived.json()["data"]] == [carriers["memory"]]
    for path in own_lists(carriers):
        response = api.get(path, {"page": 1, "page_size": 10, "format": "json"})
        assert response.status_code == 200, (path, response.content[:300])
    assert api.get("/api/extraction-runs", {"status": "done"}).status_code == 200
    for path, params in [
        ("/api/users", {"external_id": "nobody"}),
        ("/api/admin/consolidation-proposals", {"status": "pending", "kind": "merge"}),
    ]:
        response = staff_api.get(path, {**params, "page_size": 10})
        assert response.status_code == 200, (path, response.content[:300])
