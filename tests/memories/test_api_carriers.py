"""Topics, messages, work sessions, projects and personas: the REST a chat product mirrors."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.accounts.tenants import default_tenant
from memories.models import Message, Persona, Project, Topic, WorkSession, WorkSessionMessage
from tests.memories.helpers import assert_error


@pytest.fixture
def persona(db) -> Persona:
    return Persona.objects.create(tenant=default_tenant(), name="Tutor")


@pytest.fixture
def project(owner) -> Project:
    return Project.objects.create(owner=owner, name="Backend")


@pytest.fixture
def topic(owner) -> Topic:
    return Topic.objects.create(user=owner, title="Trip planning")


@pytest.fixture
def session(owner) -> WorkSession:
    return WorkSession.objects.create(user=owner)


# --- topics --------------------------------------------------------------------------------------


def test_it_creates_an_empty_topic(api, owner):
    response = api.post("/api/topics", {}, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    topic = Topic.objects.get(id=body["id"])
    assert topic.user_id == owner.id
    assert (topic.title, topic.persona_id, topic.project_id, topic.channel_id) == (
        "",
        None,
        None,
        None,
    )
    assert body["persona_id"] is None and body["project_id"] is None


def test_it_creates_a_topic_with_every_field(api, owner, persona, project):
    channel = uuid.uuid4()

    response = api.post(
        "/api/topics",
        {
            "title": "Trip",
            "persona_id": str(persona.id),
            "project_id": str(project.id),
            "channel_id": str(channel),
        },
        format="json",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["title"] == "Trip"
    assert body["persona_id"] == str(persona.id)
    assert body["project_id"] == str(project.id)
    assert body["channel_id"] == str(channel)
    topic = Topic.objects.get(id=body["id"])
    assert (topic.user_id, topic.persona_id, topic.project_id, topic.channel_id) == (
        owner.id,
        persona.id,
        project.id,
        channel,
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"project_id": "foreign"}, "project_id"),
        ({"project_id": str(uuid.uuid4())}, "project_id"),
        ({"persona_id": str(uuid.uuid4())}, "persona_id"),
        ({"persona_id": "nope"}, "persona_id"),
        ({"channel_id": "nope"}, "channel_id"),
        ({"title": "t" * 201}, "title"),
        ({"title": ["t"]}, "title"),
        ({"user_id": "x"}, "user_id"),
    ],
)
def test_it_rejects_a_bad_topic(api, other, body, field):
    if body.get("project_id") == "foreign":
        body = {"project_id": str(Project.objects.create(owner=other, name="Theirs").id)}

    response = api.post("/api/topics", body, format="json")

    assert_error(response, 400, field)
    assert not Topic.objects.exists()


def test_it_lists_and_fetches_only_the_callers_topics(api, owner, other, topic):
    Topic.objects.create(user=other, title="Not yours")

    listing = api.get("/api/topics")
    one = api.get(f"/api/topics/{topic.id}")

    assert listing.status_code == 200
    assert [t["id"] for t in listing.json()["data"]] == [str(topic.id)]
    assert listing.json()["count"] == 1
    assert one.status_code == 200
    assert one.json()["title"] == "Trip planning"


@pytest.mark.parametrize("role", ["user", "assistant", "system"])
def test_it_appends_a_message_to_a_topic(api, topic, role):
    response = api.post(
        f"/api/topics/{topic.id}/messages", {"role": role, "content": "Hello there"}, format="json"
    )

    assert response.status_code == 201, response.json()
    assert response.json()["role"] == role
    assert response.json()["content"] == "Hello there"
    message = Message.objects.get(id=response.json()["id"])
    assert (message.topic_id, message.role, message.content) == (topic.id, role, "Hello there")


def test_it_lists_a_topics_messages_in_order(api, topic):
    for content in ["first", "second", "third"]:
        api.post(
            f"/api/topics/{topic.id}/messages", {"role": "user", "content": content}, format="json"
        )

    response = api.get(f"/api/topics/{topic.id}/messages")

    assert response.status_code == 200
    body = response.json()
    assert [m["content"] for m in body["data"]] == ["first", "second", "third"]
    assert body["count"] == 3


@pytest.mark.parametrize(
    ("path", "make"),
    [
        ("/api/topics", lambda user, i: Topic.objects.create(user=user, title=f"t{i}")),
        ("/api/work-sessions", lambda user, i: WorkSession.objects.create(user=user)),
        ("/api/projects", lambda user, i: Project.objects.create(owner=user, name=f"p{i}")),
        (
            "/api/personas",
            lambda user, i: Persona.objects.create(tenant=default_tenant(), name=f"p{i}"),
        ),
    ],
)
def test_carrier_lists_run_the_same_number_of_queries_for_3_and_30_rows(api, owner, path, make):
    def queries_for(count: int) -> tuple[int, int]:
        for model in (Topic, WorkSession, Project, Persona):
            model.objects.all().delete()
        for i in range(count):
            make(owner, i)
        with CaptureQueriesContext(connection) as captured:
            response = api.get(path)
        assert response.status_code == 200
        return len(captured), len(response.json()["data"])

    few, few_listed = queries_for(3)
    many, many_listed = queries_for(30)

    assert (few_listed, many_listed) == (3, 30)
    assert few == many


def test_the_message_list_runs_the_same_number_of_queries_for_3_and_30_messages(api, topic):
    def queries_for(count: int) -> tuple[int, int]:
        Message.objects.all().delete()
        Message.objects.bulk_create(
            Message(topic=topic, role="user", content=f"m{i}") for i in range(count)
        )
        with CaptureQueriesContext(connection) as captured:
            response = api.get(f"/api/topics/{topic.id}/messages")
        assert response.status_code == 200
        return len(captured), len(response.json()["data"])

    few, few_listed = queries_for(3)
    many, many_listed = queries_for(30)

    assert (few_listed, many_listed) == (3, 30)
    assert few == many


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "robot", "content": "hi"}, "role"),
        ({"role": "USER", "content": "hi"}, "role"),
        ({"content": "hi"}, "role"),
        ({"role": "user"}, "content"),
        ({"role": "user", "content": ""}, "content"),
        ({"role": "user", "content": "   "}, "content"),
        ({"role": "user", "content": ["hi"]}, "content"),
        ({"role": "user", "content": "x" * 32_001}, "content"),
        ({"role": "user", "content": "hi", "topic_id": "x"}, "topic_id"),
    ],
)
def test_it_rejects_a_bad_message(api, topic, body, field):
    response = api.post(f"/api/topics/{topic.id}/messages", body, format="json")

    assert_error(response, 400, field)
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("method", "suffix"), [("get", ""), ("get", "/messages"), ("post", "/messages")]
)
def test_another_users_topic_answers_404(other_api, topic, method, suffix):
    Message.objects.create(topic=topic, role="user", content="Owner's words")

    response = getattr(other_api, method)(
        f"/api/topics/{topic.id}{suffix}", {"role": "user", "content": "intruder"}, format="json"
    )

    assert_error(response, 404, "id")
    assert "Owner's words" not in response.content.decode()
    assert list(Message.objects.values_list("content", flat=True)) == ["Owner's words"]


# --- work sessions -------------------------------------------------------------------------------


def test_it_creates_a_work_session_without_a_project(api, owner):
    response = api.post("/api/work-sessions", {}, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["project_id"] is None
    session = WorkSession.objects.get(id=response.json()["id"])
    assert (session.user_id, session.project_id) == (owner.id, None)


def test_it_creates_a_work_session_in_a_project(api, project):
    response = api.post("/api/work-sessions", {"project_id": str(project.id)}, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["project_id"] == str(project.id)
    assert WorkSession.objects.get(id=response.json()["id"]).project_id == project.id


@pytest.mark.parametrize("project_id", ["foreign", "unknown", "not-a-uuid"])
def test_it_rejects_a_work_session_in_a_project_that_is_not_the_callers(api, other, project_id):
    project_id = {
        "foreign": str(Project.objects.create(owner=other, name="Theirs").id),
        "unknown": str(uuid.uuid4()),
    }.get(project_id, project_id)

    response = api.post("/api/work-sessions", {"project_id": project_id}, format="json")

    assert_error(response, 400, "project_id")
    assert not WorkSession.objects.exists()


def test_it_appends_and_lists_work_session_messages(api, session):
    first = api.post(
        f"/api/work-sessions/{session.id}/messages",
        {"role": "user", "content": "Run the tests"},
        format="json",
    )
    api.post(
        f"/api/work-sessions/{session.id}/messages",
        {"role": "assistant", "content": "All green"},
        format="json",
    )

    listing = api.get(f"/api/work-sessions/{session.id}/messages")

    assert first.status_code == 201, first.json()
    message = WorkSessionMessage.objects.get(id=first.json()["id"])
    assert (message.session_id, message.role, message.content) == (
        session.id,
        "user",
        "Run the tests",
    )
    assert listing.status_code == 200
    assert [(m["role"], m["content"]) for m in listing.json()["data"]] == [
        ("user", "Run the tests"),
        ("assistant", "All green"),
    ]


def test_it_rejects_a_bad_work_session_message(api, session):
    response = api.post(
        f"/api/work-sessions/{session.id}/messages", {"role": "tool", "content": "x"}, format="json"
    )

    assert_error(response, 400, "role")
    assert not WorkSessionMessage.objects.exists()


@pytest.mark.parametrize(
    ("method", "suffix"), [("get", ""), ("get", "/messages"), ("post", "/messages")]
)
def test_another_users_work_session_answers_404(other_api, session, method, suffix):
    response = getattr(other_api, method)(
        f"/api/work-sessions/{session.id}{suffix}",
        {"role": "user", "content": "intruder"},
        format="json",
    )

    assert_error(response, 404, "id")
    assert not WorkSessionMessage.objects.exists()


def test_it_lists_only_the_callers_work_sessions(api, other, session):
    WorkSession.objects.create(user=other)

    listing = api.get("/api/work-sessions").json()

    assert [s["id"] for s in listing["data"]] == [str(session.id)]


# --- projects ------------------------------------------------------------------------------------


def test_it_creates_a_project(api, owner):
    response = api.post("/api/projects", {"name": "Website"}, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["name"] == "Website"
    project = Project.objects.get(id=response.json()["id"])
    assert (project.owner_id, project.name) == (owner.id, "Website")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "  "}, "name"),
        ({"name": "n" * 201}, "name"),
        ({"name": "ok", "owner_id": "x"}, "owner_id"),
    ],
)
def test_it_rejects_a_bad_project(api, body, field):
    assert_error(api.post("/api/projects", body, format="json"), 400, field)
    assert not Project.objects.exists()


def test_it_lists_and_fetches_only_the_callers_projects(api, other, other_api, project):
    foreign = Project.objects.create(owner=other, name="Theirs")

    assert [p["id"] for p in api.get("/api/projects").json()["data"]] == [str(project.id)]
    assert api.get(f"/api/projects/{project.id}").json()["name"] == "Backend"
    assert_error(api.get(f"/api/projects/{foreign.id}"), 404, "id")
    assert_error(other_api.get(f"/api/projects/{project.id}"), 404, "id")


# --- personas -----------------------------------------------------------------------------------


def test_every_user_can_read_personas(api, persona):
    listing = api.get("/api/personas")
    one = api.get(f"/api/personas/{persona.id}")

    assert listing.status_code == 200
    assert [p["name"] for p in listing.json()["data"]] == ["Tutor"]
    assert one.status_code == 200
    assert one.json()["memory_enabled"] is True


def test_staff_create_a_persona(staff_api):
    response = staff_api.post(
        "/api/personas", {"name": "Coach", "memory_enabled": False}, format="json"
    )

    assert response.status_code == 201, response.json()
    persona = Persona.objects.get(id=response.json()["id"])
    assert (persona.name, persona.memory_enabled) == ("Coach", False)


def test_a_normal_user_cannot_create_a_persona(api):
    response = api.post("/api/personas", {"name": "Coach", "memory_enabled": True}, format="json")

    assert_error(response, 403)
    assert not Persona.objects.exists()


def test_staff_change_a_persona(staff_api, persona):
    response = staff_api.patch(
        f"/api/personas/{persona.id}", {"memory_enabled": False}, format="json"
    )

    assert response.status_code == 200, response.json()
    assert response.json()["memory_enabled"] is False
    persona.refresh_from_db()
    assert (persona.name, persona.memory_enabled) == ("Tutor", False)


def test_a_normal_user_cannot_change_a_persona(api, persona):
    response = api.patch(
        f"/api/personas/{persona.id}", {"name": "Hacked", "memory_enabled": False}, format="json"
    )

    assert_error(response, 403)
    persona.refresh_from_db()
    assert (persona.name, persona.memory_enabled) == ("Tutor", True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"memory_enabled": "maybe"}, "memory_enabled"),
        ({"memory_enabled": None}, "memory_enabled"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_it_rejects_a_bad_persona_change(staff_api, persona, body, field):
    assert_error(staff_api.patch(f"/api/personas/{persona.id}", body, format="json"), 400, field)
    persona.refresh_from_db()
    assert (persona.name, persona.memory_enabled) == ("Tutor", True)
