"""The Django admin's memory list: staff open it and filter by status, scope and source."""

import pytest
from django.test import Client

from memories import services
from memories.accounts.tenants import default_tenant
from memories.models import Persona, Project, Scope, Source, Status, User
from tests.memories.helpers import make_memory, make_pending

URL = "/admin/memories/memory/"


@pytest.fixture
def admin_client_(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-root"))
    return client


@pytest.fixture
def memories(owner, other) -> dict:
    project = Project.objects.create(owner=owner, name="Backend")
    persona = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    return {
        "active": make_memory(owner, key="alpha-marker", value="First fact"),
        "pending": make_pending(other, key="bravo-marker", value="Second fact"),
        "archived": make_memory(
            owner, key="charlie-marker", value="Third fact", status=Status.ARCHIVED
        ),
        "project": make_memory(
            owner, key="delta-marker", value="Fourth fact", scope=Scope.PROJECT, project=project
        ),
        "tool": make_memory(owner, key="echo-marker", value="Fifth fact", source=Source.TOOL),
        "persona": make_memory(
            owner, key="foxtrot-marker", value="Sixth fact", scope=Scope.PERSONA, persona=persona
        ),
    }


MARKERS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}


def shown(response) -> set[str]:
    assert response.status_code == 200
    page = response.content.decode()
    return {m for m in MARKERS if f"{m}-marker" in page}


def test_staff_open_the_memory_list(admin_client_, memories):
    assert shown(admin_client_.get(URL)) == MARKERS


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"status__exact": "pending_review"}, {"bravo"}),
        ({"status__exact": "archived"}, {"charlie"}),
        ({"scope__exact": "project"}, {"delta"}),
        ({"scope__exact": "persona"}, {"foxtrot"}),
        ({"source__exact": "tool"}, {"echo"}),
        ({"source__exact": "conversation"}, {"bravo"}),
        ({"status__exact": "active", "scope__exact": "user", "source__exact": "manual"}, {"alpha"}),
    ],
)
def test_staff_filter_the_memory_list(admin_client_, memories, query, expected):
    assert shown(admin_client_.get(URL, query)) == expected


def test_the_admin_leaves_out_deleted_memories(admin_client_, owner, memories):
    services.memory_delete(memory=memories["active"], actor=owner)

    assert "alpha" not in shown(admin_client_.get(URL))


def test_a_non_staff_user_is_sent_to_the_login_page(owner):
    client = Client()
    client.force_login(owner)

    response = client.get(URL)

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
