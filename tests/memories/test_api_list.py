"""GET /api/memories (filters, pagination, query count) and GET /api/memories/count."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.accounts.tenants import default_tenant
from memories.models import Memory, Persona, Project, Scope, Source, Status
from tests.memories.helpers import assert_error, bulk_memories, make_memory, make_pending

URL = "/api/memories"


def ids(response) -> set[str]:
    assert response.status_code == 200, response.json()
    return {m["id"] for m in response.json()["data"]}


def test_it_answers_the_list_envelope(api, owner):
    memory = make_memory(owner)

    response = api.get(URL)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "count", "next", "previous"}
    assert body["count"] == 1
    assert body["next"] is None and body["previous"] is None
    [item] = body["data"]
    assert item["id"] == str(memory.id)
    assert item["key"] == "language" and item["value"] == "Go with Gin"
    assert item["owner_id"] == str(owner.id)
    assert "score" not in item


def test_it_lists_only_the_callers_memories(api, owner, other, staff):
    mine = make_memory(owner)
    make_memory(other, value="Python")
    make_memory(staff, value="Rust")

    assert ids(api.get(URL)) == {str(mine.id)}


def test_it_lists_newest_first(api, owner):
    older, newer = bulk_memories(owner, 2)
    Memory.objects.filter(id=older.id).update(created_at=timezone.now() - timedelta(days=1))

    data = api.get(URL).json()["data"]

    assert [m["id"] for m in data] == [str(newer.id), str(older.id)]


def test_it_leaves_out_deleted_memories(api, owner):
    kept, gone = bulk_memories(owner, 2)
    Memory.objects.filter(id=gone.id).update(deleted_at=timezone.now())

    assert ids(api.get(URL)) == {str(kept.id)}


def test_it_shows_only_active_memories_by_default(api, owner):
    active = make_memory(owner)
    make_pending(owner)
    bulk_memories(owner, 1, status=Status.ARCHIVED)

    assert ids(api.get(URL)) == {str(active.id)}


@pytest.mark.parametrize("status", ["active", "pending_review", "archived"])
def test_it_filters_by_status(api, owner, status):
    by_status = {s: bulk_memories(owner, 1, status=s)[0] for s in Status.values}

    assert ids(api.get(URL, {"status": status})) == {str(by_status[status].id)}


def test_it_filters_by_keyword_on_key_and_value(api, owner):
    in_key = make_memory(owner, key="favourite editor", value="Neovim")
    in_value = make_memory(owner, key="tools", value="Uses an Editor daily")
    make_memory(owner, key="language", value="Go")

    assert ids(api.get(URL, {"query": "editor"})) == {str(in_key.id), str(in_value.id)}
    assert ids(api.get(URL, {"query": "neovim"})) == {str(in_key.id)}
    assert ids(api.get(URL, {"query": "nothing-like-this"})) == set()


def test_it_filters_by_scope(api, owner):
    project = Project.objects.create(owner=owner, name="p")
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    user_memory = make_memory(owner)
    project_memory = make_memory(owner, scope=Scope.PROJECT, project=project)
    persona_user_memory = make_memory(owner, scope=Scope.PERSONA_USER, persona=persona)

    assert ids(api.get(URL, {"scope": "user"})) == {str(user_memory.id)}
    assert ids(api.get(URL, {"scope": "global"})) == {str(user_memory.id)}
    assert ids(api.get(URL, {"scope": "project"})) == {str(project_memory.id)}
    assert ids(api.get(URL, {"scope": "persona_user"})) == {str(persona_user_memory.id)}


def test_it_filters_by_project_and_persona(api, owner):
    project, elsewhere = (Project.objects.create(owner=owner, name=n) for n in "ab")
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    in_project = make_memory(owner, scope=Scope.PROJECT, project=project)
    make_memory(owner, scope=Scope.PROJECT, project=elsewhere)
    with_persona = make_memory(owner, scope=Scope.PERSONA_USER, persona=persona)
    make_memory(owner)

    assert ids(api.get(URL, {"project_id": str(project.id)})) == {str(in_project.id)}
    assert ids(api.get(URL, {"persona_id": str(persona.id)})) == {str(with_persona.id)}


def test_it_filters_by_category_and_source(api, owner):
    work = make_memory(owner, category="work")
    food = make_memory(owner, category="food")
    tool = make_memory(owner, source=Source.TOOL)

    assert ids(api.get(URL, {"category": "work"})) == {str(work.id)}
    assert ids(api.get(URL, {"source": "tool"})) == {str(tool.id)}
    assert ids(api.get(URL, {"source": "manual"})) == {str(work.id), str(food.id)}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("status", "deleted"),
        ("scope", "everyone"),
        ("source", "telepathy"),
        ("project_id", "not-a-uuid"),
        ("persona_id", "123"),
        ("category", "c" * 101),
        ("page", "two"),
        ("page", "0"),
        ("page", "-1"),
        ("page_size", "lots"),
        ("page_size", "0"),
        ("page_size", "1.5"),
        ("page", "\u00b2"),
        ("page_size", "\u00b2"),
        ("query", "a\x00b"),
    ],
)
def test_it_rejects_an_invalid_filter_value(api, owner, field, value):
    make_memory(owner)

    assert_error(api.get(URL, {field: value}), 400, field)


def test_it_pages_by_fifty_by_default(api, owner):
    bulk_memories(owner, 60)

    first = api.get(URL).json()
    second = api.get(URL, {"page": 2}).json()

    assert (first["count"], len(first["data"])) == (60, 50)
    assert first["previous"] is None
    assert "page=2" in first["next"]
    assert (second["count"], len(second["data"])) == (60, 10)
    assert second["next"] is None
    assert second["previous"] is not None
    assert not {m["id"] for m in first["data"]} & {m["id"] for m in second["data"]}


def test_it_honours_page_size(api, owner):
    bulk_memories(owner, 5)

    body = api.get(URL, {"page_size": 2, "page": 3}).json()

    assert body["count"] == 5
    assert len(body["data"]) == 1
    assert "page_size=2" in body["previous"]


def test_it_caps_page_size_at_two_hundred(api, owner):
    bulk_memories(owner, 201)

    body = api.get(URL, {"page_size": 1000}).json()

    assert body["count"] == 201
    assert len(body["data"]) == 200
    assert body["next"] is not None


def test_the_list_runs_the_same_number_of_queries_for_3_and_30_memories(api, owner):
    project = Project.objects.create(owner=owner, name="p")
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")

    def fill(count):
        Memory.objects.all().delete()
        bulk_memories(owner, count // 3)
        bulk_memories(owner, count // 3, scope=Scope.PROJECT, project=project)
        bulk_memories(owner, count // 3, scope=Scope.PERSONA_USER, persona=persona)

    def queries_for_listing() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            response = api.get(URL)
        assert response.status_code == 200
        return len(captured), len(response.json()["data"])

    fill(3)
    few, few_listed = queries_for_listing()
    fill(30)
    many, many_listed = queries_for_listing()

    assert (few_listed, many_listed) == (3, 30)
    assert few == many


def test_it_counts_active_and_pending_memories_of_the_caller_only(api, owner, other):
    make_memory(owner)
    make_memory(owner, value="Python")
    make_pending(owner)
    bulk_memories(owner, 1, status=Status.ARCHIVED)
    bulk_memories(owner, 1, deleted_at=timezone.now())
    make_memory(other)
    make_pending(other)
    make_pending(other, value="Lives in Porto")

    response = api.get("/api/memories/count")

    assert response.status_code == 200
    assert response.json() == {"active": 2, "pending": 1}


def test_the_count_is_zero_for_a_new_user(api, other):
    make_memory(other)

    assert api.get("/api/memories/count").json() == {"active": 0, "pending": 0}
