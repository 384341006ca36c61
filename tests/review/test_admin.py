"""The Django admin for memories: filters, search, approve/reject/archive actions
through the services, and each memory's revision history."""

import pytest

from memories import services
from memories.accounts.tenants import default_tenant
from memories.models import Memory, MemoryRevision, Persona, RevisionAction, Scope, Source, Status
from tests.memories.helpers import make_memory, make_pending
from tests.review.html import page_of

CHANGELIST = "/admin/memories/memory/"


def change_url(memory: Memory) -> str:
    return f"/admin/memories/memory/{memory.id}/change/"


def listed(response) -> set[str]:
    """The keys of the memories in the changelist's result table."""
    table = page_of(response).find("table", id="result_list")
    return {row.find("th", cls="field-key").text for row in table.find("tbody").find_all("tr")}


@pytest.fixture
def memories(owner, other) -> dict:
    project = services.project_create(owner=owner, name="Backend")
    tutor = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    return {
        "alpha": make_memory(owner, key="alpha", value="Lives in Porto", category="places"),
        "bravo": make_pending(other, key="bravo", value="Lives in Oslo", category="places"),
        "charlie": make_memory(owner, key="charlie", value="Old job", status=Status.ARCHIVED),
        "delta": make_memory(
            owner, key="delta", value="Uses Postgres", scope=Scope.PROJECT, project=project
        ),
        "echo": make_memory(owner, key="echo", value="Found by a tool", source=Source.TOOL),
        "foxtrot": make_memory(
            owner, key="foxtrot", value="Speaks German", scope=Scope.PERSONA_USER, persona=tutor
        ),
        "golf": make_pending(owner, key="golf", value="Plays golf with Zoltan", category="sport"),
        "tutor": tutor,
        "owner": owner,
        "other": other,
    }


def test_staff_see_every_live_memory_in_the_admin_list(superuser_client, owner, memories):
    services.memory_delete(memory=make_memory(owner, key="hotel", value="Gone"), actor=owner)

    assert listed(superuser_client.get(CHANGELIST)) == {
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
    }


def test_the_admin_list_offers_filters_for_status_scope_source_category_user_and_persona(
    superuser_client, memories
):
    page = page_of(superuser_client.get(CHANGELIST))

    filters = {
        d.attrs["data-filter-title"]
        for d in page.find(id="changelist-filter").find_all()
        if "data-filter-title" in d.attrs
    }
    assert filters == {"status", "scope", "source", "category", "user", "persona"}


FILTERS = [
    (lambda m: {"status__exact": Status.PENDING_REVIEW}, {"bravo", "golf"}),
    (lambda m: {"status__exact": Status.ARCHIVED}, {"charlie"}),
    (lambda m: {"scope__exact": Scope.PROJECT}, {"delta"}),
    (lambda m: {"source__exact": Source.TOOL}, {"echo"}),
    (lambda m: {"source__exact": Source.CONVERSATION}, {"bravo", "golf"}),
    (lambda m: {"category": "places"}, {"alpha", "bravo"}),
    (lambda m: {"user__id__exact": m["other"].id}, {"bravo"}),
    (lambda m: {"persona__id__exact": m["tutor"].id}, {"foxtrot"}),
    (
        lambda m: {"status__exact": Status.PENDING_REVIEW, "user__id__exact": m["owner"].id},
        {"golf"},
    ),
]
FILTER_IDS = [
    "pending",
    "archived",
    "project scope",
    "tool source",
    "conversation source",
    "category",
    "user",
    "persona",
    "pending of one user",
]


@pytest.mark.parametrize(("query_of", "expected"), FILTERS, ids=FILTER_IDS)
def test_staff_filter_the_admin_list(superuser_client, memories, query_of, expected):
    assert listed(superuser_client.get(CHANGELIST, query_of(memories))) == expected


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ("golf", {"golf"}),
        ("zoltan", {"golf"}),
        ("Lives in", {"alpha", "bravo"}),
        ("other", {"bravo"}),
    ],
    ids=["by key", "by value", "by words of the value", "by username"],
)
def test_staff_search_the_admin_list(superuser_client, memories, search, expected):
    assert listed(superuser_client.get(CHANGELIST, {"q": search})) == expected


def act(client, action: str, memories: list[Memory]):
    return client.post(
        CHANGELIST,
        {"action": action, "index": "0", "_selected_action": [str(m.id) for m in memories]},
    )


def admin_messages(client, response) -> list[str]:
    """The admin's messages on the page an action redirected to."""
    assert response.status_code == 302, response.content[:300]
    page = page_of(client.get(response["Location"]))
    return [li.text for ul in page.find_all("ul", cls="messagelist") for li in ul.find_all("li")]


def revisions_of(memory: Memory) -> list[tuple[str, str | None]]:
    return [
        (r.action, r.actor.username if r.actor else None)
        for r in MemoryRevision.objects.filter(memory=memory).order_by("id")
    ]


@pytest.mark.parametrize(
    ("action", "status", "revision", "message"),
    [
        ("approve_selected", Status.ACTIVE, RevisionAction.APPROVE, "Approved 2 memories."),
        ("reject_selected", Status.ARCHIVED, RevisionAction.REJECT, "Rejected 2 memories."),
    ],
)
def test_the_approve_and_reject_actions_change_only_the_selected_pending_memories(
    superuser_client, memories, action, status, revision, message
):
    pending = [memories["bravo"], memories["golf"]]
    active, archived = memories["alpha"], memories["charlie"]
    untouched = {m.id: revisions_of(m) for m in (active, archived, memories["echo"])}

    response = act(superuser_client, action, [*pending, active, archived])

    assert response.status_code == 302
    for memory in pending:
        stored = Memory.objects.get(id=memory.id)
        assert stored.status == status
        assert revisions_of(memory) == [("create", None), (revision, "root")]
        last = MemoryRevision.objects.filter(memory=memory).latest("id")
        assert (last.before["status"], last.after["status"]) == (Status.PENDING_REVIEW, status)
    assert Memory.objects.get(id=active.id).status == Status.ACTIVE
    assert Memory.objects.get(id=archived.id).status == Status.ARCHIVED
    assert {m: revisions_of(Memory(id=m)) for m in untouched} == untouched
    assert admin_messages(superuser_client, response) == [message]


def test_the_archive_action_archives_active_and_pending_memories_with_a_revision(
    superuser_client, memories
):
    chosen = [memories["alpha"], memories["bravo"], memories["charlie"]]

    response = act(superuser_client, "archive_selected", chosen)

    assert response.status_code == 302
    for memory in chosen:
        assert Memory.objects.get(id=memory.id).status == Status.ARCHIVED
    assert revisions_of(memories["alpha"])[-1] == (RevisionAction.ARCHIVE, "root")
    assert revisions_of(memories["bravo"])[-1] == (RevisionAction.ARCHIVE, "root")
    assert revisions_of(memories["charlie"]) == [("create", "owner")]
    assert Memory.objects.get(id=memories["echo"].id).status == Status.ACTIVE
    assert admin_messages(superuser_client, response) == ["Archived 2 memories."]


def test_approving_a_replacement_in_the_admin_archives_the_memory_it_replaces(
    superuser_client, owner
):
    old = make_memory(owner, key="city", value="Lives in Porto")
    new = make_pending(owner, key="city", value="Moved to Lisbon", supersedes=old)

    act(superuser_client, "approve_selected", [new])

    assert Memory.objects.get(id=new.id).status == Status.ACTIVE
    assert Memory.objects.get(id=old.id).status == Status.ARCHIVED
    assert revisions_of(old)[-1] == (RevisionAction.ARCHIVE, "root")


def test_a_memorys_change_page_shows_its_revision_history(superuser_client, superuser, owner):
    memory = make_pending(owner, key="city", value="Lives in Rotterdam")
    services.memory_update(memory=memory, actor=superuser, changes={"value": "Lives in Utrecht"})
    services.memory_review(memory_ids=[memory.id], actor=superuser, decision="approve")

    page = page_of(superuser_client.get(change_url(memory)))

    inline = page.find(id="revisions-group")
    rows = [row for row in inline.find("tbody").find_all("tr") if row.find_all("td")]
    actions = [row.find("td", cls="field-action").text for row in rows]
    assert actions == ["Approve", "Edit", "Create"]
    edit = rows[1]
    assert "Lives in Rotterdam" in edit.find("td", cls="field-before").text
    assert "Lives in Utrecht" in edit.find("td", cls="field-after").text
    assert "root" in edit.find("td", cls="field-actor").text


def test_saving_a_memory_in_the_admin_goes_through_the_service_and_writes_a_revision(
    superuser_client, owner
):
    memory = make_pending(owner, key="city", value="Lives in Rotterdam", category="places")
    form = page_of(superuser_client.get(change_url(memory))).find("form", id="memory_form")

    response = superuser_client.post(
        change_url(memory), {**form.form_data(), "value": "Lives in Utrecht", "_save": "Save"}
    )

    assert response.status_code == 302, page_of(response).find_all(cls="errorlist")
    stored = Memory.objects.get(id=memory.id)
    assert (stored.value, stored.status) == ("Lives in Utrecht", Status.PENDING_REVIEW)
    last = MemoryRevision.objects.filter(memory=memory).latest("id")
    assert (last.action, last.actor.username) == (RevisionAction.EDIT, "root")
    assert (last.before["value"], last.after["value"]) == ("Lives in Rotterdam", "Lives in Utrecht")


def test_staff_without_admin_rights_cannot_approve_through_the_admin(staff, memories):
    from django.test import Client

    client = Client()
    client.force_login(staff)

    response = act(client, "approve_selected", [memories["bravo"]])

    assert response.status_code == 403
    assert Memory.objects.get(id=memories["bravo"].id).status == Status.PENDING_REVIEW
