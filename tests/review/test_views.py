"""The staff review pages through the Django test client: real URLs, then the status,
the HTML and the database rows."""

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit
from uuid import uuid4

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus, SourceKind
from memories import services
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import default_tenant, tenant_get_or_create
from memories.models import (
    Memory,
    MemoryRevision,
    Persona,
    RevisionAction,
    Scope,
    Source,
    Status,
    User,
)
from tests.conftest import make_user
from tests.memories.helpers import bulk_memories, make_memory, make_pending
from tests.review.html import candidate_ids, messages_of, page_of

QUEUE = "/review/queue"
BULK = "/review/queue/bulk"
DASHBOARD = "/review/"


def edit_url(memory: Memory) -> str:
    return f"/review/memories/{memory.id}/edit"


def state(memory: Memory) -> dict:
    """Everything a review could change about a memory, as stored now."""
    row = Memory.objects.get(id=memory.id)
    return {
        "status": row.status,
        "key": row.key,
        "value": row.value,
        "category": row.category,
        "importance": row.importance,
        "updated_at": row.updated_at,
        "revisions": list(row.revisions.order_by("id").values_list("action", flat=True)),
    }


def states(memories) -> dict:
    return {memory.id: state(memory) for memory in memories}


def redirected_to(response) -> str:
    assert response.status_code == 302, (response.status_code, response.content[:300])
    return response["Location"]


def follow(client: Client, response):
    """The page a browser lands on after a form's redirect."""
    return page_of(client.get(redirected_to(response)))


# --- Who may use the pages ---------------------------------------------------------------------


@pytest.fixture
def candidate(owner) -> Memory:
    return make_pending(owner)


REQUESTS = [
    ("get", lambda memory: DASHBOARD, {}),
    ("get", lambda memory: QUEUE, {}),
    ("get", edit_url, {}),
    ("post", lambda memory: BULK, {"action": "approve"}),
    ("post", lambda memory: BULK, {"action": "reject"}),
    ("post", edit_url, {"key": "city", "value": "Lives in Rome", "importance": "0.9"}),
    ("post", edit_url, {"key": "city", "value": "Rome", "importance": "0.9", "approve": "1"}),
    ("post", lambda memory: f"/review/memories/{memory.id}/decide", {"action": "approve"}),
    ("post", lambda memory: f"/review/memories/{memory.id}/decide", {"action": "reject"}),
    ("get", lambda memory: f"/review/conversations/topic/{uuid4()}", {}),
    ("get", lambda memory: "/review/proposals", {}),
    ("post", lambda memory: f"/review/proposals/{uuid4()}/decide", {"action": "approve"}),
]
REQUEST_IDS = [
    "dashboard",
    "queue",
    "edit page",
    "bulk approve",
    "bulk reject",
    "edit",
    "edit and approve",
    "approve one",
    "reject one",
    "conversation",
    "proposals",
    "decide a proposal",
]


def send(client: Client, method: str, url: str, data: dict, memory: Memory):
    if method == "post" and url == BULK:
        data = {**data, "ids": [str(memory.id)]}
    return getattr(client, method)(url, data)


@pytest.mark.parametrize(("method", "url_of", "data"), REQUESTS, ids=REQUEST_IDS)
def test_anonymous_visitors_are_sent_to_the_login_page(candidate, method, url_of, data):
    before = state(candidate)
    url = url_of(candidate)

    location = urlsplit(redirected_to(send(Client(), method, url, data, candidate)))

    assert location.path == "/admin/login/"
    assert parse_qs(location.query)["next"] == [url]
    assert state(candidate) == before


@pytest.mark.parametrize(("method", "url_of", "data"), REQUESTS, ids=REQUEST_IDS)
def test_signed_in_users_who_are_not_staff_are_refused(
    owner_client, candidate, method, url_of, data
):
    before = state(candidate)

    response = send(owner_client, method, url_of(candidate), data, candidate)

    assert response.status_code == 403
    assert state(candidate) == before


def test_an_inactive_staff_account_is_refused(candidate):
    former = make_user("former", is_staff=True)
    client = Client()
    client.force_login(former)
    former.is_active = False
    former.save(update_fields=["is_active"])

    response = client.get(QUEUE)

    assert response.status_code in (302, 403)
    assert str(candidate.id) not in response.content.decode()


def test_staff_open_every_review_page(staff_client, candidate):
    for url in (DASHBOARD, QUEUE, edit_url(candidate)):
        assert page_of(staff_client.get(url)).find("h1")


def test_the_bulk_action_only_accepts_posts(staff_client, candidate):
    response = staff_client.get(BULK, {"action": "approve", "ids": [str(candidate.id)]})

    assert response.status_code == 405
    assert Memory.objects.get(id=candidate.id).status == Status.PENDING_REVIEW


# --- The queue ---------------------------------------------------------------------------------


def test_the_queue_lists_pending_memories_of_every_user_newest_first(staff_client, owner, other):
    oldest = make_pending(owner, key="pet", value="Has a cat")
    middle = make_pending(other, key="city", value="Lives in Oslo")
    newest = make_pending(owner, key="job", value="Works as a baker")
    make_memory(owner, key="food", value="Likes sushi")
    make_memory(owner, key="old", value="Archived fact", status=Status.ARCHIVED)
    now = timezone.now()
    for hours, memory in ((3, oldest), (2, middle), (1, newest)):
        Memory.objects.filter(id=memory.id).update(created_at=now - timedelta(hours=hours))

    page = page_of(staff_client.get(QUEUE))

    assert candidate_ids(page) == [str(newest.id), str(middle.id), str(oldest.id)]
    assert page.find(id="pending-count").text == "3"
    users = [li.find("span", cls="user").text for li in page.find_all("li", cls="candidate")]
    assert users == ["owner", "other", "owner"]
    facts = [li.find("p", cls="fact").text for li in page.find_all("li", cls="candidate")]
    assert facts == ["job: Works as a baker", "city: Lives in Oslo", "pet: Has a cat"]


def test_the_queue_leaves_out_deleted_memories(staff_client, owner):
    kept = make_pending(owner, key="pet", value="Has a cat")
    deleted = make_pending(owner, key="city", value="Lives in Oslo")
    services.memory_delete(memory=deleted, actor=owner)

    page = page_of(staff_client.get(QUEUE))

    assert candidate_ids(page) == [str(kept.id)]
    assert page.find(id="pending-count").text == "1"


def test_an_empty_queue_says_nothing_is_waiting(staff_client, owner):
    make_memory(owner)

    page = page_of(staff_client.get(QUEUE))

    assert candidate_ids(page) == []
    assert page.find(id="pending-count").text == "0"
    assert "Nothing waiting for review" in page.find("p", cls="empty").text


def test_the_queue_shows_a_candidates_text_escaped(staff_client, owner):
    make_pending(owner, key="note", value="<script>alert('x')</script> & more")

    response = staff_client.get(QUEUE)

    assert "<script>alert" not in response.content.decode()
    assert "<script>alert('x')</script> & more" in page_of(response).find(cls="value").text


@pytest.fixture
def varied_queue(owner, other) -> dict:
    """One pending memory for each filter, plus active ones that must never be listed."""
    project = services.project_create(owner=owner, name="Backend")
    tutor = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    coach = Persona.objects.create(tenant=default_tenant(), name="Coach")
    conversation = {"status": Status.PENDING_REVIEW, "actor": None}
    memories = {
        "plain": make_pending(owner, key="pet", value="Has a cat", category="animals"),
        "other user": make_pending(other, key="city", value="Lives in Oslo", category="places"),
        "project": make_pending(
            owner, key="db", value="Uses PostgreSQL", scope=Scope.PROJECT, project=project
        ),
        "work": make_memory(
            owner, key="editor", value="Uses Vim", source=Source.WORK, **conversation
        ),
        "places": make_pending(owner, key="home", value="Lives in Porto", category="places"),
        "tutor": make_pending(
            owner, key="level", value="Learns B2 German", scope=Scope.PERSONA_USER, persona=tutor
        ),
        "coach": make_pending(
            owner, key="goal", value="Runs a marathon", scope=Scope.PERSONA, persona=coach
        ),
    }
    make_memory(other, key="active city", value="Lives in Bergen", category="places")
    make_memory(
        owner, key="active level", value="Knows A1", scope=Scope.PERSONA_USER, persona=tutor
    )
    return {"memories": memories, "owner": owner, "other": other, "tutor": tutor, "coach": coach}


FILTERS = [
    (lambda q: {"user": q["other"].id}, {"other user"}),
    (lambda q: {"scope": Scope.PROJECT}, {"project"}),
    (lambda q: {"scope": Scope.PERSONA}, {"coach"}),
    (lambda q: {"source": Source.WORK}, {"work"}),
    (lambda q: {"category": "places"}, {"other user", "places"}),
    (lambda q: {"persona": q["tutor"].id}, {"tutor"}),
    (lambda q: {"user": q["owner"].id, "category": "places"}, {"places"}),
    (
        lambda q: {"user": q["owner"].id, "source": Source.CONVERSATION, "scope": Scope.USER},
        {"plain", "places"},
    ),
]
FILTER_IDS = [
    "user",
    "scope project",
    "scope persona",
    "source",
    "category",
    "persona",
    "user and category",
    "user, source and scope",
]


@pytest.mark.parametrize(("query_of", "expected"), FILTERS, ids=FILTER_IDS)
def test_staff_filter_the_queue(staff_client, varied_queue, query_of, expected):
    memories = varied_queue["memories"]
    wanted = {str(memories[name].id) for name in expected}

    page = page_of(staff_client.get(QUEUE, query_of(varied_queue)))

    assert set(candidate_ids(page)) == wanted
    assert page.find(id="pending-count").text == str(len(wanted))


def test_the_filters_keep_their_values_on_the_page(staff_client, varied_queue):
    query = {"user": varied_queue["owner"].id, "source": Source.WORK, "category": "places"}

    form = page_of(staff_client.get(QUEUE, query)).find("form", cls="filters").form_data()

    assert form == {
        "user": str(varied_queue["owner"].id),
        "persona": "",
        "scope": "",
        "source": Source.WORK,
        "age": "",
        "category": "places",
    }


def test_the_queue_shows_25_candidates_a_page(staff_client, owner):
    bulk_memories(owner, 30, status=Status.PENDING_REVIEW, source=Source.CONVERSATION)

    first = page_of(staff_client.get(QUEUE))
    second = page_of(staff_client.get(QUEUE, {"page": 2}))

    assert len(candidate_ids(first)) == 25
    assert len(candidate_ids(second)) == 5
    assert set(candidate_ids(first)).isdisjoint(candidate_ids(second))
    everything = Memory.objects.filter(status=Status.PENDING_REVIEW).values_list("id", flat=True)
    assert set(candidate_ids(first)) | set(candidate_ids(second)) == {str(i) for i in everything}
    assert first.find(id="pending-count").text == "30"
    assert second.find(id="pending-count").text == "30"
    assert "page 1 of 2" in first.find("nav", cls="pages").text
    assert "page 2 of 2" in second.find("nav", cls="pages").text


def test_the_page_links_keep_the_filters(staff_client, owner, other):
    bulk_memories(owner, 26, status=Status.PENDING_REVIEW, source=Source.CONVERSATION)
    bulk_memories(other, 3, status=Status.PENDING_REVIEW, source=Source.CONVERSATION)

    page = page_of(staff_client.get(QUEUE, {"user": owner.id}))
    older = next(a for a in page.find("nav", cls="pages").find_all("a") if "older" in a.text)
    second = page_of(staff_client.get(QUEUE + older.attrs["href"]))

    assert page.find(id="pending-count").text == "26"
    assert parse_qs(urlsplit(older.attrs["href"]).query) == {"user": [str(owner.id)], "page": ["2"]}
    assert len(candidate_ids(second)) == 1
    assert Memory.objects.get(id=candidate_ids(second)[0]).user == owner


def test_the_queue_shows_the_most_similar_memories_of_the_same_user(staff_client, owner, other):
    make_memory(owner, key="pet", value="Has a dog called Rex")
    make_memory(owner, key="city", value="Lives in Porto")
    make_memory(owner, key="job", value="Works as a nurse")
    make_memory(owner, key="sport", value="Plays tennis on Sundays")
    make_memory(owner, key="food", value="Likes sushi")
    make_memory(owner, key="pet", value="Had a puppy named Rex", status=Status.ARCHIVED)
    make_memory(other, key="pet", value="Has a puppy called Rex")
    dog = make_pending(owner, key="pet", value="Owns a dog named Rex")
    lonely = make_pending(make_user("third"), key="music", value="Plays the cello")

    page = page_of(staff_client.get(QUEUE))
    similar = page.find("li", data_id=str(dog.id)).find("details", cls="similar")
    items = [li.text for li in similar.find_all("li")]

    assert 1 <= len(items) <= 3
    assert "pet: Has a dog called Rex" in items[0]
    assert not any("puppy" in item for item in items), items
    assert "No similar memory" in page.find("li", data_id=str(lonely.id)).find(cls="hint").text


def test_the_queue_leaves_out_memories_that_are_only_nearest_not_similar(staff_client, owner):
    # The default model gives any two memories 0.8 or so: "similar" has to mean more.
    make_memory(owner, key="pet", value="Has a dog called Rex")
    make_memory(owner, key="food", value="Vegetarian, likes Thai curries")
    make_memory(owner, key="city", value="Lives in Porto")
    dog = make_pending(owner, key="pet", value="Walks Rex the dog every morning")

    page = page_of(staff_client.get(QUEUE))
    similar = page.find("li", data_id=str(dog.id)).find("details", cls="similar")
    items = [li.text for li in similar.find_all("li")]

    assert len(items) == 1 and "pet: Has a dog called Rex" in items[0], items


def test_the_queue_shows_the_old_and_the_new_text_of_a_replacement(staff_client, owner):
    old = make_memory(owner, key="city", value="Lives in Porto")
    new = make_pending(owner, key="city", value="Moved to Lisbon", supersedes=old)

    compare = page_of(staff_client.get(QUEUE)).find("li", data_id=str(new.id)).find(cls="compare")

    assert "Lives in Porto" in compare.find(cls="old").text
    assert "Moved to Lisbon" in compare.find(cls="new").text
    assert "Moved to Lisbon" not in compare.find(cls="old").text


def test_the_queue_costs_a_fixed_number_of_queries_plus_one_similarity_search_per_candidate(
    staff_client, owner, other
):
    project = services.project_create(owner=owner, name="Backend")
    tutor = Persona.objects.create(tenant=default_tenant(), name="Tutor")

    def add_candidates(user, n):
        """n replacement proposals, and n project (owner) or persona_user (other) candidates."""
        for i in range(n):
            old = make_memory(user, key=f"fact {i}", value=f"Likes colour number {i}")
            make_pending(user, key=f"fact {i}", value=f"Loves colour number {i}", supersedes=old)
            if user == owner:
                make_pending(
                    user,
                    key=f"db {i}",
                    value=f"Uses Redis {i}",
                    project=project,
                    scope=Scope.PROJECT,
                )
            else:
                make_pending(
                    user,
                    key=f"level {i}",
                    value=f"Speaks German at B{i}",
                    persona=tutor,
                    scope=Scope.PERSONA_USER,
                )

    def queries() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as context:
            page = page_of(staff_client.get(QUEUE))
        return len(candidate_ids(page)), len(context.captured_queries)

    add_candidates(owner, 1)
    few, few_queries = queries()
    add_candidates(owner, 3)
    add_candidates(other, 3)
    many, many_queries = queries()

    assert many == few + 12
    # Each candidate may cost its similarity search (its vector and its neighbours), no more.
    assert many_queries - few_queries <= 2 * (many - few), (few_queries, many_queries)


# --- Bulk approve and reject -------------------------------------------------------------------


@pytest.fixture
def queue_of_five(owner, other) -> dict:
    return {
        "a": make_pending(owner, key="pet", value="Has a cat"),
        "b": make_pending(owner, key="city", value="Lives in Oslo"),
        "c": make_pending(owner, key="job", value="Works as a baker"),
        "d": make_pending(other, key="food", value="Likes sushi"),
        "e": make_pending(other, key="sport", value="Plays chess"),
        "active": make_memory(owner, key="language", value="Speaks Dutch"),
        "others active": make_memory(other, key="language", value="Speaks Greek"),
        "archived": make_memory(owner, key="car", value="Drives a Fiat", status=Status.ARCHIVED),
    }


@pytest.mark.parametrize(
    ("action", "status", "revision", "message"),
    [
        ("approve", Status.ACTIVE, RevisionAction.APPROVE, "Approved 3 memories."),
        ("reject", Status.ARCHIVED, RevisionAction.REJECT, "Rejected 3 memories."),
    ],
)
def test_a_bulk_action_changes_exactly_the_selected_pending_memories(
    staff_client, staff, queue_of_five, action, status, revision, message
):
    selected = [queue_of_five[name] for name in ("a", "c", "d")]
    untouched = [m for name, m in queue_of_five.items() if name not in ("a", "c", "d")]
    before = states(untouched)

    response = staff_client.post(
        BULK, {"action": action, "ids": [str(m.id) for m in selected], "next": QUEUE}
    )

    assert redirected_to(response) == QUEUE
    for memory in selected:
        assert Memory.objects.get(id=memory.id).status == status
        last = MemoryRevision.objects.filter(memory=memory).latest("id")
        assert (last.action, last.actor) == (revision, staff)
        assert (last.before["status"], last.after["status"]) == (Status.PENDING_REVIEW, status)
    assert states(untouched) == before
    page = page_of(staff_client.get(QUEUE))
    assert messages_of(page) == [message]
    assert set(candidate_ids(page)) == {str(queue_of_five[n].id) for n in ("b", "e")}
    assert page.find(id="pending-count").text == "2"


def test_a_bulk_message_says_one_memory_in_the_singular(staff_client, queue_of_five):
    response = staff_client.post(BULK, {"action": "approve", "ids": [str(queue_of_five["a"].id)]})

    assert messages_of(follow(staff_client, response)) == ["Approved 1 memory."]


def test_a_bulk_action_leaves_memories_that_are_no_longer_pending_as_they_are(
    staff_client, queue_of_five
):
    done = [queue_of_five[name] for name in ("active", "archived")]
    before = states(done)
    ids = [str(queue_of_five["a"].id), *(str(m.id) for m in done), str(uuid4())]

    response = staff_client.post(BULK, {"action": "approve", "ids": ids})

    assert states(done) == before
    assert Memory.objects.get(id=queue_of_five["a"].id).status == Status.ACTIVE
    [message] = messages_of(follow(staff_client, response))
    assert message.startswith("Approved 1 memory.")
    assert "3" in message


def test_approving_the_same_memory_twice_counts_it_once(staff_client, queue_of_five):
    memory_id = str(queue_of_five["a"].id)

    response = staff_client.post(BULK, {"action": "approve", "ids": [memory_id, memory_id]})

    assert messages_of(follow(staff_client, response))[0].startswith("Approved 1 memory.")
    revisions = MemoryRevision.objects.filter(memory_id=memory_id, action=RevisionAction.APPROVE)
    assert revisions.count() == 1


@pytest.mark.parametrize(
    "data_of",
    [
        lambda a: {"action": "approve"},
        lambda a: {"action": "approve", "ids": [str(a.id), "not-a-uuid"]},
        lambda a: {"action": "delete", "ids": [str(a.id)]},
        lambda a: {"ids": [str(a.id)]},
    ],
    ids=["no selection", "a broken id", "an unknown action", "no action"],
)
def test_a_bulk_action_without_a_valid_selection_changes_nothing(
    staff_client, queue_of_five, data_of
):
    before = states(queue_of_five.values())

    response = staff_client.post(BULK, data_of(queue_of_five["a"]))

    assert states(queue_of_five.values()) == before
    page = follow(staff_client, response)
    assert page.find("ul", cls="messages").find("li", cls="error")


def test_bulk_approving_a_replacement_archives_the_memory_it_replaces(staff_client, staff, owner):
    old = make_memory(owner, key="city", value="Lives in Porto")
    new = make_pending(owner, key="city", value="Moved to Lisbon", supersedes=old)

    staff_client.post(BULK, {"action": "approve", "ids": [str(new.id)]})

    assert Memory.objects.get(id=new.id).status == Status.ACTIVE
    assert Memory.objects.get(id=old.id).status == Status.ARCHIVED
    archived = MemoryRevision.objects.filter(memory=old).latest("id")
    assert (archived.action, archived.actor) == (RevisionAction.ARCHIVE, staff)
    assert archived.before["status"] == Status.ACTIVE


def test_bulk_rejecting_a_replacement_keeps_the_memory_it_would_replace(staff_client, owner):
    old = make_memory(owner, key="city", value="Lives in Porto")
    new = make_pending(owner, key="city", value="Moved to Lisbon", supersedes=old)
    before = state(old)

    staff_client.post(BULK, {"action": "reject", "ids": [str(new.id)]})

    assert Memory.objects.get(id=new.id).status == Status.ARCHIVED
    assert state(old) == before


# --- Edit before approving ---------------------------------------------------------------------


@pytest.fixture
def city(owner) -> Memory:
    return make_pending(owner, key="city", value="Lives in Lisbon", category="places")


EDIT = {
    "key": "home city",
    "value": "Lives in Lisbon, Portugal",
    "category": "location",
    "importance": "0.8",
}


def test_the_edit_page_shows_the_candidate_in_a_form(staff_client, city):
    page = page_of(staff_client.get(edit_url(city), {"next": QUEUE + "?page=1"}))
    form = page.find("form", cls="edit-form").form_data()

    assert form["key"] == "city"
    assert form["value"] == "Lives in Lisbon"
    assert form["category"] == "places"
    assert float(form["importance"]) == 0.5
    assert form["next"] == QUEUE + "?page=1"


def test_editing_then_approving_stores_the_edit_approves_and_writes_revisions(
    staff_client, staff, city
):
    response = staff_client.post(edit_url(city), {**EDIT, "approve": "1", "next": QUEUE})

    assert redirected_to(response) == QUEUE
    stored = Memory.objects.get(id=city.id)
    assert (stored.key, stored.value, stored.category, stored.importance) == (
        "home city",
        "Lives in Lisbon, Portugal",
        "location",
        0.8,
    )
    assert stored.status == Status.ACTIVE
    create, edit, approve = MemoryRevision.objects.filter(memory=city).order_by("id")
    assert (create.action, edit.action, approve.action) == ("create", "edit", "approve")
    assert edit.actor == approve.actor == staff
    assert {k: edit.before[k] for k in ("key", "value", "category", "importance", "status")} == {
        "key": "city",
        "value": "Lives in Lisbon",
        "category": "places",
        "importance": 0.5,
        "status": Status.PENDING_REVIEW,
    }
    assert (edit.after["key"], edit.after["value"]) == ("home city", "Lives in Lisbon, Portugal")
    assert edit.after["status"] == Status.PENDING_REVIEW
    assert approve.before["status"] == Status.PENDING_REVIEW
    assert approve.after["status"] == Status.ACTIVE
    assert approve.after["value"] == "Lives in Lisbon, Portugal"
    page = page_of(staff_client.get(QUEUE))
    assert len(messages_of(page)) == 1 and "approved" in messages_of(page)[0]
    assert str(city.id) not in candidate_ids(page)


def test_an_edited_and_approved_memory_is_found_by_its_new_text(staff_client, owner, city):
    make_memory(owner, key="vet", value="Takes the cat to the vet every month")
    make_memory(owner, key="garden", value="Grows tomatoes on the balcony")
    make_memory(owner, key="job", value="Works as a nurse")
    make_memory(owner, key="sport", value="Plays tennis on Sundays")
    dog = make_pending(owner, key="pet", value="Owns a dog named Rex")
    edit = {"key": "pet", "value": "Has a dog called Rex", "importance": "0.5", "approve": "1"}
    staff_client.post(edit_url(city), edit)

    page = page_of(staff_client.get(QUEUE))

    similar = page.find("li", data_id=str(dog.id)).find("details", cls="similar")
    assert "pet: Has a dog called Rex" in similar.find("li").text


def test_saving_without_approving_keeps_the_memory_pending(staff_client, staff, city):
    response = staff_client.post(edit_url(city), {**EDIT, "save": "1", "next": QUEUE})

    assert redirected_to(response) == QUEUE
    stored = Memory.objects.get(id=city.id)
    assert (stored.key, stored.status) == ("home city", Status.PENDING_REVIEW)
    actions = list(MemoryRevision.objects.filter(memory=city).values_list("action", flat=True))
    assert sorted(actions) == ["create", "edit"]


def test_approving_an_unchanged_candidate_from_the_edit_page_writes_only_the_approval(
    staff_client, city
):
    staff_client.post(
        edit_url(city),
        {
            "key": "city",
            "value": "Lives in Lisbon",
            "category": "places",
            "importance": "0.5",
            "approve": "1",
        },
    )

    assert Memory.objects.get(id=city.id).status == Status.ACTIVE
    actions = MemoryRevision.objects.filter(memory=city).order_by("id").values_list("action")
    assert [a for (a,) in actions] == ["create", "approve"]


@pytest.mark.parametrize(
    "bad",
    [{"value": ""}, {"key": ""}, {"importance": "lots"}, {"key": "k" * 1000}],
    ids=["empty value", "empty key", "importance not a number", "key too long"],
)
def test_an_invalid_edit_shows_the_form_again_and_changes_nothing(staff_client, city, bad):
    before = state(city)

    page = page_of(staff_client.post(edit_url(city), {**EDIT, **bad, "approve": "1"}))

    assert page.find(cls="errorlist")
    assert state(city) == before


def test_an_edit_sets_an_expires_at_and_refuses_a_passed_one(staff_client, city):
    passed = page_of(
        staff_client.post(edit_url(city), {**EDIT, "save": "1", "expires_at": "2001-01-01T00:00"})
    )
    assert passed.find("ul", cls="errorlist").attrs.get("id") == "id_expires_at_error"
    assert Memory.objects.get(id=city.id).expires_at is None

    response = staff_client.post(
        edit_url(city), {**EDIT, "save": "1", "next": QUEUE, "expires_at": "2099-05-31T23:59"}
    )

    assert redirected_to(response) == QUEUE
    stored = Memory.objects.get(id=city.id)
    assert stored.expires_at == datetime(2099, 5, 31, 23, 59, tzinfo=UTC)
    form = page_of(staff_client.get(edit_url(city))).find("form", cls="edit-form").form_data()
    assert form["expires_at"] == "2099-05-31T23:59"


def test_an_edit_keeps_an_expires_at_that_has_passed_when_it_comes_back_unchanged(
    staff_client, city
):
    passed = datetime(2001, 1, 1, 12, 30, 45, 123456, tzinfo=UTC)
    Memory.objects.filter(id=city.id).update(expires_at=passed)
    form = page_of(staff_client.get(edit_url(city))).find("form", cls="edit-form").form_data()
    assert form["expires_at"] == "2001-01-01T12:30"

    response = staff_client.post(
        edit_url(city), {**form, "value": "Lives in Rome", "save": "1", "next": QUEUE}
    )

    assert redirected_to(response) == QUEUE
    stored = Memory.objects.get(id=city.id)
    assert (stored.value, stored.expires_at) == ("Lives in Rome", passed)


def test_editing_a_memory_that_is_no_longer_pending_changes_nothing(staff_client, staff, city):
    services.memory_review(memory_ids=[city.id], actor=staff, decision="approve")
    before = state(city)

    response = staff_client.post(edit_url(city), {**EDIT, "approve": "1", "next": QUEUE})

    assert state(city) == before
    [message] = messages_of(follow(staff_client, response))
    assert "not pending" in message


def test_an_unknown_or_deleted_memory_has_no_edit_page(staff_client, owner, city):
    services.memory_delete(memory=city, actor=owner)

    assert staff_client.get(edit_url(city)).status_code == 404
    assert staff_client.get(f"/review/memories/{uuid4()}/edit").status_code == 404


def test_editing_and_approving_a_replacement_archives_the_memory_it_replaces(staff_client, owner):
    old = make_memory(owner, key="city", value="Lives in Porto")
    new = make_pending(owner, key="city", value="Moved to Lisbon", supersedes=old)

    page = page_of(staff_client.get(edit_url(new)))
    assert "Lives in Porto" in page.find(cls="compare").find(cls="old").text
    staff_client.post(edit_url(new), {**EDIT, "approve": "1"})

    assert Memory.objects.get(id=new.id).status == Status.ACTIVE
    assert Memory.objects.get(id=old.id).status == Status.ARCHIVED


def test_the_edit_page_shows_similar_memories_of_the_same_user(staff_client, owner, other):
    make_memory(owner, key="pet", value="Has a dog called Rex")
    make_memory(other, key="pet", value="Has a puppy called Rex")
    dog = make_pending(owner, key="pet", value="Owns a dog named Rex")

    items = [
        li.text
        for li in page_of(staff_client.get(edit_url(dog))).find("ul", cls="similar").find_all("li")
    ]

    assert items and "Has a dog called Rex" in items[0]
    assert not any("puppy" in item for item in items)


def test_an_edit_while_the_embedding_service_is_down_changes_nothing(
    staff_client, owner, openai_embedder
):
    city = make_pending(owner, key="city", value="Lives in Lisbon", category="places")
    before = state(city)
    openai_embedder.embedding_failures.extend([503] * 5)

    page = page_of(staff_client.post(edit_url(city), {**EDIT, "approve": "1", "next": QUEUE}))

    assert state(city) == before
    [message] = messages_of(page)
    assert "unavailable" in message
    assert page.find("form", cls="edit-form").form_data()["value"] == EDIT["value"]


def test_the_queue_and_the_edit_work_without_an_embedder(staff_client, owner, no_embedder):
    make_memory(owner, key="pet", value="Has a dog called Rex")
    dog = make_pending(owner, key="pet", value="Owns a dog named Rex")

    page = page_of(staff_client.get(QUEUE))
    response = staff_client.post(edit_url(dog), {**EDIT, "approve": "1"})

    assert candidate_ids(page) == [str(dog.id)]
    assert "No similar memory" in page.find("li", data_id=str(dog.id)).find(cls="hint").text
    assert redirected_to(response) == QUEUE
    assert Memory.objects.get(id=dog.id).status == Status.ACTIVE


# --- Dashboard ---------------------------------------------------------------------------------


def run(
    status: str, *, reason: str = "", age: timedelta = timedelta(minutes=5), user=None
) -> ExtractionRun:
    created = ExtractionRun.objects.create(
        task_id=str(uuid4()),
        source_kind=SourceKind.TOPIC,
        source_id=uuid4(),
        status=status,
        reason=reason,
        user=user,
    )
    ExtractionRun.objects.filter(id=created.id).update(created_at=timezone.now() - age)
    return created


def test_the_dashboard_shows_memory_counts_and_recent_extractions(staff_client, owner, other):
    make_pending(owner, key="pet", value="Has a cat")
    make_pending(other, key="city", value="Lives in Oslo")
    make_memory(owner, key="job", value="Works as a baker")
    make_memory(other, key="food", value="Likes sushi")
    make_memory(owner, key="sport", value="Plays chess")
    make_memory(owner, key="car", value="Drives a Fiat", status=Status.ARCHIVED)
    gone = make_memory(owner, key="gone", value="Deleted fact")
    services.memory_delete(memory=gone, actor=owner)
    run(RunStatus.DONE)
    run(RunStatus.SKIPPED)
    run(RunStatus.FAILED, reason="model timed out")
    run(RunStatus.DONE, age=timedelta(hours=23))
    run(RunStatus.FAILED, reason="ancient failure", age=timedelta(days=2))
    run(RunStatus.DONE, age=timedelta(days=3))

    page = page_of(staff_client.get(DASHBOARD))

    assert page.find(id="count-pending").text == "2"
    assert page.find(id="count-active").text == "3"
    assert page.find(id="count-archived").text == "1"
    assert page.find(id="runs-total").text == "3"  # the skipped run is not an extraction
    assert page.find(id="runs-skipped").text == "1"
    assert page.find(id="runs-failed").text == "1"
    failures = page.find("table", id="failures").text
    assert "model timed out" in failures
    assert "ancient failure" not in failures


def test_a_quiet_dashboard_shows_zeros_and_no_failures(staff_client):
    run(RunStatus.FAILED, reason="ancient failure", age=timedelta(days=2))

    page = page_of(staff_client.get(DASHBOARD))

    ids = ("count-pending", "count-active", "count-archived", "runs-total", "runs-failed")
    assert [page.find(id=i).text for i in ids] == ["0"] * 5
    assert page.find_all("table", id="failures") == []
    assert "ancient failure" in page.find("table", id="runs").text


def test_a_tenants_review_account_sees_only_its_own_tenants_figures_and_runs(db):
    """Issue 42: a review key's account (staff of its tenant) saw every tenant's counts, and
    every tenant's last runs and failures with their users and errors."""
    accounts = {}
    for slug in ("acme", "globex"):
        tenant = tenant_get_or_create(slug=slug)
        key, _ = api_key_create(name=f"{slug} review", scopes=["review"], tenant=tenant)
        accounts[slug] = key.account
        user = User.objects.create(username=f"{slug}-user", tenant=tenant, external_id="u1")
        make_pending(user, key="pet", value=f"{slug} pet")
        make_memory(user, key="job", value=f"{slug} job")
        run(RunStatus.FAILED, reason=f"{slug}'s model failed", user=user)
    make_memory(accounts["acme"], key="note", value="the account's own, not an end user's")

    for slug, other_slug in (("acme", "globex"), ("globex", "acme")):
        client = Client()
        client.force_login(accounts[slug])
        page = page_of(client.get(DASHBOARD))

        ids = ("count-pending", "count-active", "runs-total", "runs-failed")
        assert [page.find(id=i).text for i in ids] == ["1", "1", "1", "1"], slug
        assert f"{slug}'s model failed" in page.find("table", id="failures").text
        text = page.text
        assert f"{other_slug}'s model failed" not in text and f"{other_slug}-user" not in text


def test_the_dashboard_links_to_the_queue(staff_client):
    page = page_of(staff_client.get(DASHBOARD))

    assert page.find("a", cls="pending").attrs["href"] == QUEUE


# --- CSRF and redirects ------------------------------------------------------------------------


@pytest.fixture
def strict_client(staff) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    return client


def test_a_bulk_post_without_the_csrf_token_is_refused(strict_client, city):
    response = strict_client.post(BULK, {"action": "approve", "ids": [str(city.id)]})

    assert response.status_code == 403
    assert Memory.objects.get(id=city.id).status == Status.PENDING_REVIEW


def test_an_edit_post_without_the_csrf_token_is_refused(strict_client, city):
    before = state(city)

    response = strict_client.post(edit_url(city), {**EDIT, "approve": "1"})

    assert response.status_code == 403
    assert state(city) == before


def test_a_bulk_post_with_the_token_from_the_queue_page_goes_through(strict_client, city):
    form = page_of(strict_client.get(QUEUE)).find("form", id="bulk-form").form_data()

    response = strict_client.post(BULK, {**form, "action": "approve", "ids": [str(city.id)]})

    assert redirected_to(response) == QUEUE
    assert Memory.objects.get(id=city.id).status == Status.ACTIVE


def test_an_edit_post_with_the_token_from_the_edit_page_goes_through(strict_client, city):
    form = page_of(strict_client.get(edit_url(city))).find("form", cls="edit-form").form_data()

    response = strict_client.post(edit_url(city), {**form, "value": "Rome", "approve": "1"})

    assert redirected_to(response) == QUEUE
    assert Memory.objects.get(id=city.id).status == Status.ACTIVE


OFF_SITE = [
    "https://evil.example/steal",
    "//evil.example/steal",
    "/\\evil.example/steal",
    "https://evil.example/review/queue",
    "javascript:alert(1)",
    "/admin/logout/",
]


@pytest.mark.parametrize("target", OFF_SITE)
def test_a_bulk_action_never_redirects_off_the_review_pages(staff_client, city, target):
    response = staff_client.post(BULK, {"action": "approve", "ids": [str(city.id)], "next": target})

    assert redirected_to(response) == QUEUE


@pytest.mark.parametrize("target", OFF_SITE)
def test_the_edit_page_never_redirects_off_the_review_pages(staff_client, city, target):
    page = page_of(staff_client.get(edit_url(city), {"next": target}))
    response = staff_client.post(edit_url(city), {**EDIT, "approve": "1", "next": target})

    assert page.find("form", cls="edit-form").form_data()["next"] == QUEUE
    assert all(target not in a.attrs.get("href", "") for a in page.find_all("a"))
    assert redirected_to(response) == QUEUE


def test_a_bulk_action_returns_to_the_filtered_page_it_came_from(staff_client, city):
    back = f"{QUEUE}?source=conversation&page=2"

    response = staff_client.post(BULK, {"action": "reject", "ids": [str(city.id)], "next": back})

    assert redirected_to(response) == back


def test_the_edit_link_brings_staff_back_to_the_filtered_queue(staff_client, owner, city):
    query = {"user": owner.id, "category": "places"}
    page = page_of(staff_client.get(QUEUE, query))
    link = page.find("li", data_id=str(city.id)).find("a", cls="edit").attrs["href"]

    form = page_of(staff_client.get(link)).find("form", cls="edit-form").form_data()
    response = staff_client.post(link, {**form, "approve": "1"})

    assert urlsplit(link).path == edit_url(city)
    back = urlsplit(redirected_to(response))
    assert back.path == QUEUE
    assert parse_qs(back.query) == {"user": [str(owner.id)], "category": ["places"]}


def test_a_tenants_review_account_sees_and_changes_only_its_own_tenants_entities(db):
    from memories.models import Entity

    accounts, entities = {}, {}
    for slug in ("acme", "globex"):
        tenant = tenant_get_or_create(slug=slug)
        key, _ = api_key_create(name=f"{slug} review", scopes=["review"], tenant=tenant)
        accounts[slug] = key.account
        user = User.objects.create(username=f"{slug}-user", tenant=tenant, external_id="u1")
        memory = make_memory(user, key="wife", value=f"Married to {slug} Sofia")
        entities[slug] = Entity.objects.create(
            user=user, name=f"{slug} Sofia", relation="wife", names_folded=[f"{slug} sofia"]
        )
        entities[slug].memories.add(memory)

    client = Client()
    client.force_login(accounts["acme"])
    text = page_of(client.get("/review/entities")).text
    renamed = client.post(
        f"/review/entities/{entities['globex'].id}/edit",
        {f"{entities['globex'].id}-name": "taken over", f"{entities['globex'].id}-kind": "person"},
    )

    assert "acme Sofia" in text and "Married to acme Sofia" in text
    assert "globex" not in text
    assert renamed.status_code == 404
    assert Entity.objects.get(id=entities["globex"].id).name == "globex Sofia"
