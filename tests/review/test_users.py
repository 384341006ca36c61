"""The users explorer of the review pages (issue 48, item 1) through the Django test client:
the list of users, a user's page (memories by category, the timeline of changes, filters),
the export and the erasure; real URLs, then the status, the HTML and the database rows."""

import json
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit
from uuid import uuid4

import pytest
from django.test import Client
from django.utils import timezone

from memories import services
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import default_tenant, tenant_get_or_create
from memories.erasure import erasure_hide
from memories.models import Entity, Memory, MemoryRevision, Scope, Status, User
from memories.retention.sweep import memory_expire
from tests.conftest import client_for, end_user, make_user
from tests.memories.helpers import bulk_memories, make_memory, make_pending
from tests.review.html import messages_of, page_of

USERS = "/review/users"


def user_url(user: User) -> str:
    return f"{USERS}/{user.id}"


def listed_ids(page) -> list[str]:
    return [row.attrs["data-id"] for row in page.find_all("tr", cls="user-row")]


def shown_memory_ids(page) -> list[str]:
    return [row.attrs["data-id"] for row in page.find_all("tr", cls="memory")]


def timeline(page) -> list:
    return page.find_all("li", cls="change")


def redirected_to(response) -> str:
    assert response.status_code == 302, (response.status_code, response.content[:300])
    return response["Location"]


def saved(user: User, key: str, value: str, **fields) -> dict:
    """A memory saved through POST /api/memories as the user, as a product saves it."""
    response = client_for(user).post(
        "/api/memories", {"key": key, "value": value, **fields}, format="json"
    )
    assert response.status_code in (200, 201), response.content[:300]
    return response.json()


def review_account(slug: str) -> User:
    """The account of a review key of the tenant `slug` (staff of that tenant only)."""
    key, _ = api_key_create(
        name=f"{slug} review", scopes=["review"], tenant=tenant_get_or_create(slug=slug)
    )
    return key.account


def tenant_user(slug: str, external_id: str) -> User:
    return User.objects.create(
        username=f"{slug}-{external_id}",
        tenant=tenant_get_or_create(slug=slug),
        external_id=external_id,
    )


@pytest.fixture
def dana(db) -> User:
    """An end user of the default tenant, as a product's X-User-Id makes them."""
    return end_user(make_user("dana"), "ext-Dana-7")


# --- Who may use the pages ---------------------------------------------------------------------


def requests_of(user: User) -> list[tuple[str, str, dict]]:
    return [
        ("get", USERS, {}),
        ("get", user_url(user), {}),
        ("get", f"{user_url(user)}/export", {}),
        ("post", f"{user_url(user)}/erase", {"confirm": user.external_id}),
    ]


def test_anonymous_visitors_are_sent_to_the_login_page(dana):
    make_memory(dana)
    for method, url, data in requests_of(dana):
        location = urlsplit(redirected_to(getattr(Client(), method)(url, data)))

        assert location.path == "/admin/login/"
        assert parse_qs(location.query)["next"] == [url]
    assert User.objects.filter(id=dana.id).exists()


def test_signed_in_users_who_are_not_staff_are_refused(owner_client, dana):
    make_memory(dana)
    for method, url, data in requests_of(dana):
        assert getattr(owner_client, method)(url, data).status_code == 403
    assert Memory.objects.filter(user=dana).count() == 1


def test_the_nav_links_to_the_users_page(staff_client):
    page = page_of(staff_client.get("/review/"))

    link = next(a for a in page.find("nav").find_all("a") if a.text == "Users")
    assert link.attrs["href"] == USERS


# --- The list ----------------------------------------------------------------------------------


def test_the_list_finds_a_user_by_any_part_of_their_external_id_in_any_case(staff_client, dana):
    end_user(make_user("erin"), "ext-erin-8")

    found = page_of(staff_client.get(USERS, {"q": "dana-7"}))
    everyone = page_of(staff_client.get(USERS))

    assert listed_ids(found) == [str(dana.id)]
    assert found.find(id="user-count").text == "1"
    assert found.find("tr", cls="user-row").find("a").attrs["href"] == user_url(dana)
    assert {str(dana.id)} < set(listed_ids(everyone))


def test_the_list_finds_a_local_login_by_username(staff_client, owner, dana):
    page = page_of(staff_client.get(USERS, {"q": "OWN"}))

    assert listed_ids(page) == [str(owner.id)]
    assert "owner" in page.find("td", cls="who").text
    assert "local login" in page.find("td", cls="who").text


def test_a_search_that_finds_nobody_says_so(staff_client, dana):
    page = page_of(staff_client.get(USERS, {"q": "nobody-here"}))

    assert listed_ids(page) == []
    assert "nobody-here" in page.find("p", cls="empty").text


def test_a_search_with_a_nul_is_ignored_not_sent_to_the_database(staff_client, dana):
    page = page_of(staff_client.get(USERS, {"q": "dana\x00"}))

    assert str(dana.id) in listed_ids(page)
    assert "not valid" in page.find("form", cls="filters").text


def test_each_row_counts_the_users_memories_by_status_and_tells_their_last_activity(
    staff_client, dana
):
    make_memory(dana, key="pet", value="Has a cat")
    make_memory(dana, key="job", value="Baker")
    make_pending(dana, key="city", value="Lives in Porto")
    make_memory(dana, key="old", value="An old fact", status=Status.ARCHIVED)
    services.memory_delete(memory=make_memory(dana, key="gone", value="Deleted"), actor=dana)
    moment = timezone.now() + timedelta(days=3)
    Memory.objects.filter(user=dana, key="job").update(last_accessed_at=moment)

    page = page_of(staff_client.get(USERS, {"q": "ext-dana-7"}))

    row = page.find("tr", cls="user-row")
    counts = [row.find("td", cls=f"count-{name}").text for name in STATUS_COLUMNS]
    assert counts == ["1", "2", "1", "1"]
    assert row.find("td", cls="who").text == "ext-Dana-7"
    assert row.find("time").text == moment.strftime("%Y-%m-%d %H:%M")


STATUS_COLUMNS = ("pending", "active", "archived", "deleted")


def test_a_user_without_memories_has_no_last_activity(staff_client, dana):
    row = page_of(staff_client.get(USERS, {"q": "ext-dana-7"})).find("tr", cls="user-row")

    assert [row.find("td", cls=f"count-{name}").text for name in STATUS_COLUMNS] == ["0"] * 4
    assert row.find_all("time") == []


def test_the_list_leaves_out_api_key_accounts_and_users_being_erased(staff_client, dana):
    account = review_account("acme")
    leaving = end_user(make_user("leaving"), "ext-leaving")
    erasure_hide(user_id=leaving.id)

    listed = listed_ids(page_of(staff_client.get(USERS)))

    assert str(dana.id) in listed
    assert str(account.id) not in listed and str(leaving.id) not in listed


def test_the_list_reads_the_same_number_of_queries_for_many_users(
    staff_client, django_assert_max_num_queries
):
    def listed_with_queries() -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as queries:
            page_of(staff_client.get(USERS))
        return len(queries)

    for index in range(2):
        user = end_user(make_user(f"user{index}"), f"ext-{index}")
        make_memory(user, key="pet", value="Has a cat")
        make_pending(user)
    few = listed_with_queries()
    for index in range(2, 12):
        user = end_user(make_user(f"user{index}"), f"ext-{index}")
        bulk_memories(user, 3)
        bulk_memories(user, 2, status=Status.ARCHIVED)
        make_pending(user)

    with django_assert_max_num_queries(few):
        page = page_of(staff_client.get(USERS))

    assert len(listed_ids(page)) == 13  # the twelve and the staff login
    # The session, the signed-in user, the count and the page of users with their counts.
    assert few <= 5


def test_the_list_shows_25_users_a_page_and_the_page_links_keep_the_search(staff_client):
    for index in range(30):
        end_user(make_user(f"match{index:02}"), f"ext-match-{index:02}")
    end_user(make_user("someone"), "ext-someone")

    first = page_of(staff_client.get(USERS, {"q": "match"}))
    older = next(a for a in first.find("nav", cls="pages").find_all("a") if "older" in a.text)
    second = page_of(staff_client.get(USERS + older.attrs["href"]))

    assert len(listed_ids(first)) == 25 and len(listed_ids(second)) == 5
    assert parse_qs(urlsplit(older.attrs["href"]).query) == {"q": ["match"], "page": ["2"]}
    assert set(listed_ids(first)).isdisjoint(listed_ids(second))
    assert first.find(id="user-count").text == "30"


def test_a_tenants_review_account_lists_only_its_own_tenants_end_users(db):
    acme_user = tenant_user("acme", "u1")
    globex_user = tenant_user("globex", "u1")
    local = make_user("local-login")
    client = Client()
    client.force_login(review_account("acme"))

    page = page_of(client.get(USERS))

    assert listed_ids(page) == [str(acme_user.id)]
    assert "acme" in page.find("tr", cls="user-row").text
    assert str(globex_user.id) not in page.text and str(local.id) not in page.text


# --- Another tenant's user ---------------------------------------------------------------------


def test_a_review_key_of_another_tenant_gets_404_for_the_users_pages(db):
    globex_user = tenant_user("globex", "u1")
    make_memory(globex_user, key="home", value="Lisbon")
    client = Client()
    client.force_login(review_account("acme"))

    for method, url, data in requests_of(globex_user):
        if url == USERS:
            continue
        assert getattr(client, method)(url, data).status_code == 404, url
    assert Memory.objects.filter(user=globex_user).count() == 1


def test_a_review_key_of_the_users_tenant_opens_their_page(db):
    acme_user = tenant_user("acme", "u1")
    make_memory(acme_user, key="home", value="Lisbon")
    client = Client()
    client.force_login(review_account("acme"))

    page = page_of(client.get(user_url(acme_user)))

    assert page.find("h1").text == "u1"


def test_an_unknown_user_or_an_api_key_account_is_not_found(staff_client):
    assert staff_client.get(f"{USERS}/{uuid4()}").status_code == 404
    assert staff_client.get(user_url(review_account("acme"))).status_code == 404


# --- The user page: memories -------------------------------------------------------------------


def test_the_user_page_shows_the_current_memories_by_category_with_their_details(
    staff_client, dana
):
    cat = make_memory(dana, key="pet", value="Has a cat called Miso", category="family")
    wife = make_memory(dana, key="wife", value="Married to Priya", category="family")
    Entity.objects.create(user=dana, name="Priya", relation="wife").memories.add(wife)
    services.memory_update(memory=wife, actor=dana, changes={"pinned": True, "importance": 0.9})
    job = make_memory(dana, key="job", value="Works as a baker", category="work")
    loose = make_memory(dana, key="note", value="Uncategorised")
    make_pending(dana, key="city", value="Lives in Porto")
    make_memory(dana, key="old", value="Archived", status=Status.ARCHIVED)
    services.memory_delete(memory=make_memory(dana, key="gone", value="x"), actor=dana)
    Memory.objects.filter(id=cat.id).update(access_count=4)
    make_memory(make_user("someone"), key="pet", value="Not Dana's")

    page = page_of(staff_client.get(user_url(dana)))

    assert [h.text for h in page.find_all("th", cls="category")] == [
        "family",
        "work",
        "no category",
    ]
    assert shown_memory_ids(page) == [str(m.id) for m in (wife, cat, job, loose)]
    assert page.find(id="memory-count").text == "4"
    pinned = page.find("tr", data_id=str(wife.id))
    assert "pinned" in pinned.classes and "pinned" in pinned.find(cls="pin").text
    assert "Priya (wife)" in pinned.find(cls="about").text
    row = page.find("tr", data_id=str(cat.id))
    cells = [td.text for td in row.find_all("td")]
    assert row.find(cls="key").text == "pet" and row.find(cls="value").text == cat.value
    assert row.find(cls="scope").text == "user"
    assert cells[1:4] == ["0.50", "1.00", "4"]
    stored = Memory.objects.get(id=cat.id)
    assert row.find("time", cls="created").text == f"{stored.created_at:%Y-%m-%d %H:%M}"
    assert row.find("time", cls="updated").text == f"{stored.updated_at:%Y-%m-%d %H:%M}"
    assert cells[5] == "manual"
    history = row.find("a", cls="history-link")
    assert parse_qs(urlsplit(history.attrs["href"]).query) == {"memory": [str(cat.id)]}


def test_an_expired_memory_not_yet_swept_is_not_current(staff_client, dana):
    kept = make_memory(dana, key="pet", value="Has a cat")
    gone = make_memory(dana, key="trip", value="In Rome this week")
    Memory.objects.filter(id=gone.id).update(expires_at=timezone.now() - timedelta(hours=1))

    page = page_of(staff_client.get(user_url(dana)))

    assert shown_memory_ids(page) == [str(kept.id)]


def test_an_extracted_memory_links_to_its_conversation_and_a_pending_one_to_its_edit_page(
    staff_client, dana
):
    topic = services.topic_create(user=dana, title="Moving")
    pending = make_pending(dana, source_topic=topic)

    page = page_of(staff_client.get(user_url(dana), {"status": Status.PENDING_REVIEW}))

    row = page.find("tr", data_id=str(pending.id))
    conversation = row.find("a", cls="provenance-link").attrs["href"]
    assert conversation == f"/review/conversations/topic/{topic.id}?memory={pending.id}"
    edit = next(a for a in row.find_all("a") if a.text == "edit")
    assert edit.attrs["href"].startswith(f"/review/memories/{pending.id}/edit?next=")
    assert page_of(staff_client.get(conversation)).find("h1")


STATUSES = [
    (Status.PENDING_REVIEW, "pending"),
    (Status.ARCHIVED, "archived"),
    ("deleted", "deleted"),
    ("", "current"),
]


@pytest.mark.parametrize(("status", "expected"), STATUSES, ids=[s[1] for s in STATUSES])
def test_the_status_filter_shows_pending_archived_or_deleted_memories(
    staff_client, dana, status, expected
):
    memories = {
        "current": make_memory(dana, key="pet", value="Has a cat"),
        "pending": make_pending(dana, key="city", value="Lives in Porto"),
        "archived": make_memory(dana, key="old", value="Archived", status=Status.ARCHIVED),
        "deleted": make_memory(dana, key="gone", value="Deleted"),
    }
    services.memory_delete(memory=memories["deleted"], actor=dana)

    page = page_of(staff_client.get(user_url(dana), {"status": status}))

    assert shown_memory_ids(page) == [str(memories[expected].id)]


@pytest.fixture
def scoped(dana) -> dict:
    """Memories of Dana in her own scope, a project of hers and a conversation of hers."""
    project = services.project_create(owner=dana, name="Bakery site")
    topic = services.topic_create(user=dana, title="Sourdough")
    return {
        "project": project,
        "topic": topic,
        "own": make_memory(dana, key="pet", value="Has a cat"),
        "in project": make_memory(
            dana, key="stack", value="Django", scope=Scope.PROJECT, project=project
        ),
        "in topic": make_memory(
            dana, key="starter", value="Rye starter", scope=Scope.SESSION, topic=topic
        ),
    }


def test_the_filters_narrow_the_memories_and_the_timeline(staff_client, dana, scoped):
    by_project = page_of(staff_client.get(user_url(dana), {"project": scoped["project"].id}))
    by_topic = page_of(staff_client.get(user_url(dana), {"topic": scoped["topic"].id}))
    by_scope = page_of(staff_client.get(user_url(dana), {"scope": Scope.USER}))

    assert shown_memory_ids(by_project) == [str(scoped["in project"].id)]
    assert by_project.find("tr", cls="memory").find(cls="carrier").text == "project Bakery site"
    assert {li.attrs["data-memory-id"] for li in timeline(by_project)} == {
        str(scoped["in project"].id)
    }
    assert shown_memory_ids(by_topic) == [str(scoped["in topic"].id)]
    assert shown_memory_ids(by_scope) == [str(scoped["own"].id)]
    form = by_project.find("form", id="filters").form_data()
    assert form == {
        "scope": "",
        "project": str(scoped["project"].id),
        "topic": "",
        "status": "",
        "group": "category",
    }


def test_invalid_filters_are_ignored_and_the_valid_ones_still_apply(staff_client, dana, scoped):
    someone_elses = services.project_create(owner=make_user("someone"), name="Not Dana's")

    page = page_of(
        staff_client.get(
            user_url(dana),
            {"project": someone_elses.id, "topic": "not-an-id", "scope": Scope.PROJECT},
        )
    )

    assert shown_memory_ids(page) == [str(scoped["in project"].id)]
    errors = page.find("form", id="filters").find("span", cls="error").text
    assert "project" in errors and "topic" in errors and "scope" not in errors
    assert "Not Dana's" not in page.text


def test_the_user_page_lists_100_memories_a_page(staff_client, dana):
    bulk_memories(dana, 105)

    first = page_of(staff_client.get(user_url(dana)))
    second = page_of(staff_client.get(user_url(dana), {"page": 2}))

    assert len(shown_memory_ids(first)) == 100 and len(shown_memory_ids(second)) == 5
    assert first.find(id="memory-count").text == "105"


def test_the_user_page_reads_as_many_queries_for_many_memories_as_for_a_few(
    staff_client, dana, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for index in range(2):
        memory = make_memory(dana, key=f"fact {index}", value="x", category=f"c{index}")
        Entity.objects.create(user=dana, name=f"Someone {index}").memories.add(memory)
    saved(dana, "home", "Lisbon")
    saved(dana, "home", "Madrid")
    with CaptureQueriesContext(connection) as queries:
        page_of(staff_client.get(user_url(dana)))
    few = len(queries)
    for index in range(2, 40):
        memory = make_memory(dana, key=f"fact {index}", value="x", category=f"c{index % 7}")
        Entity.objects.create(user=dana, name=f"Someone {index}").memories.add(memory)
        saved(dana, f"place {index}", "Lisbon")
        saved(dana, f"place {index}", "Madrid")

    with django_assert_max_num_queries(few):
        page_of(staff_client.get(user_url(dana)))


# --- The user page: the timeline ---------------------------------------------------------------


def test_the_timeline_shows_a_replaced_fact_with_its_old_and_new_value(staff_client, dana):
    lisbon = saved(dana, "home", "Lisbon")
    madrid = saved(dana, "home", "Madrid")

    page = page_of(staff_client.get(user_url(dana)))

    [replaced] = page.find_all("li", cls="replaced")
    assert replaced.attrs["data-memory-id"] == lisbon["id"]
    assert replaced.find(cls="key").text == "home"
    assert replaced.find(cls="old-value").text == "Lisbon"
    assert replaced.find(cls="new-value").text == "Madrid"
    kinds = [li.find(cls="kind").text for li in timeline(page)]
    assert kinds == ["replaced", "created", "created"]
    assert shown_memory_ids(page) == [madrid["id"]]


def test_the_replacement_value_is_the_one_it_had_when_it_replaced(staff_client, dana):
    saved(dana, "home", "Lisbon")
    madrid = saved(dana, "home", "Madrid")
    services.memory_update(
        memory=Memory.objects.get(id=madrid["id"]), actor=dana, changes={"value": "Madrid, Spain"}
    )

    page = page_of(staff_client.get(user_url(dana)))

    replaced = page.find("li", cls="replaced")
    assert replaced.find(cls="new-value").text == "Madrid"
    updated = page.find("li", cls="updated")
    assert updated.find(cls="old-value").text == "Madrid"
    assert updated.find(cls="new-value").text == "Madrid, Spain"


def test_the_timeline_tells_archived_restored_expired_deleted_and_approved(staff_client, dana):
    pet = make_memory(dana, key="pet", value="Has a cat")
    services.memory_archive(memory_id=pet.id, actor=dana)
    services.memory_restore(memory_id=pet.id, actor=dana)
    trip = make_memory(dana, key="trip", value="In Rome this week")
    Memory.objects.filter(id=trip.id).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert memory_expire(memory_id=trip.id, now=timezone.now())
    job = make_memory(dana, key="job", value="Baker")
    services.memory_delete(memory=job, actor=dana)
    city = make_pending(dana, key="city", value="Lives in Porto")
    services.memory_review(memory_ids=[city.id], actor=dana, decision="approve")
    services.memory_update(
        memory=Memory.objects.get(id=city.id), actor=dana, changes={"importance": 0.8}
    )

    page = page_of(staff_client.get(user_url(dana)))

    told = [(li.find(cls="kind").text, li.find(cls="key").text) for li in timeline(page)]
    assert told == [
        ("updated", "city"),
        ("approved", "city"),
        ("proposed", "city"),
        ("deleted", "job"),
        ("created", "job"),
        ("expired", "trip"),
        ("created", "trip"),
        ("restored", "pet"),
        ("archived", "pet"),
        ("created", "pet"),
    ]
    expired = page.find("li", cls="expired")
    assert "expired: its expires_at" in expired.find(cls="note").text
    assert "by the service" in expired.find(cls="by").text
    assert "importance: 0.5 → 0.8" in page.find("li", cls="updated").find(cls="changes").text


def test_a_memorys_history_link_shows_only_its_changes(staff_client, dana):
    home = saved(dana, "home", "Lisbon")
    saved(dana, "home", "Madrid")
    make_memory(dana, key="pet", value="Has a cat")

    page = page_of(staff_client.get(user_url(dana), {"memory": home["id"]}))

    assert [li.find(cls="kind").text for li in timeline(page)] == ["replaced", "created"]
    assert {li.attrs["data-memory-id"] for li in timeline(page)} == {home["id"]}
    assert page.find("h2", id="timeline-heading").text == "History of one memory"


def test_the_timeline_shows_the_last_100_changes_newest_first(staff_client, dana):
    memories = bulk_memories(dana, 120)
    MemoryRevision.objects.bulk_create(
        MemoryRevision(memory=memory, action="create", after={"key": memory.key}, before=None)
        for memory in memories
    )

    page = page_of(staff_client.get(user_url(dana)))

    keys = [li.find(cls="key").text for li in timeline(page)]
    assert keys == [f"key {i}" for i in range(119, 19, -1)]


def test_the_timeline_shows_a_memorys_text_escaped(staff_client, dana):
    saved(dana, "note", "<script>alert('x')</script>")
    saved(dana, "note", "<b>bold</b>")

    response = staff_client.get(user_url(dana))

    assert "<script>alert" not in response.content.decode()
    assert page_of(response).find("li", cls="replaced").find(cls="old-value").text == (
        "<script>alert('x')</script>"
    )


# --- Export ------------------------------------------------------------------------------------


def ndjson(response) -> list[dict]:
    assert response.status_code == 200, response.content[:300]
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in body.splitlines()]


def test_export_downloads_the_users_memories_as_the_api_exports_them_to_the_user(
    staff_client, dana
):
    saved(dana, "home", "Lisbon")
    saved(dana, "home", "Madrid")
    wife = make_memory(dana, key="wife", value="Married to Priya")
    Entity.objects.create(user=dana, name="Priya", relation="wife").memories.add(wife)
    make_pending(dana)
    make_memory(make_user("someone"), key="pet", value="Not Dana's")

    response = staff_client.get(f"{user_url(dana)}/export")
    lines = ndjson(response)

    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"] == f'attachment; filename="memories-{dana.id}.ndjson"'
    assert lines == ndjson(client_for(dana).get("/api/memories/export"))
    assert len(lines) == 4 and {line["external_user_id"] for line in lines} == {"ext-Dana-7"}
    page = page_of(staff_client.get(user_url(dana)))
    assert page.find("a", id="export").attrs["href"] == f"{user_url(dana)}/export"


# --- Erase -------------------------------------------------------------------------------------


def erase_form(client: Client, user: User) -> dict:
    """What the user page's erase form sends as it is (the confirmation not typed yet)."""
    form = page_of(client.get(user_url(user))).find("form", cls="erase-form")
    assert form.attrs["action"] == f"{user_url(user)}/erase"
    return form.form_data()


@pytest.mark.parametrize("typed", ["", "ext-dana-7", "ext-Dana-7 ", "dana"])
def test_erase_with_anything_but_the_external_id_erases_nothing(staff_client, dana, typed):
    make_memory(dana, key="home", value="Lisbon")
    data = {**erase_form(staff_client, dana), "confirm": typed}

    response = staff_client.post(f"{user_url(dana)}/erase", data)

    assert redirected_to(response) == user_url(dana)
    page = page_of(staff_client.get(user_url(dana)))
    assert "Nothing was erased" in messages_of(page)[0] and "ext-Dana-7" in messages_of(page)[0]
    assert User.objects.get(id=dana.id).erasure_started_at is None
    assert Memory.objects.filter(user=dana).count() == 1


def test_erase_with_the_external_id_typed_again_erases_the_user(staff_client, dana):
    make_memory(dana, key="home", value="Lisbon")
    saved(dana, "home", "Madrid")
    data = {**erase_form(staff_client, dana), "confirm": "ext-Dana-7"}

    response = staff_client.post(f"{user_url(dana)}/erase", data)

    assert redirected_to(response) == USERS
    page = page_of(staff_client.get(USERS))
    assert messages_of(page) == ["Erased “ext-Dana-7” and all their data."]
    assert not User.objects.filter(id=dana.id).exists()
    assert not Memory.objects.filter(user_id=dana.id).exists()
    assert str(dana.id) not in listed_ids(page)
    assert staff_client.get(user_url(dana)).status_code == 404


def test_a_local_login_is_erased_with_its_username(staff_client, owner):
    make_memory(owner)

    response = staff_client.post(f"{user_url(owner)}/erase", {"confirm": "owner"})

    assert redirected_to(response) == USERS
    assert not User.objects.filter(id=owner.id).exists()


def test_a_staff_account_is_not_erased(staff_client):
    colleague = make_user("colleague", is_staff=True)

    page = page_of(staff_client.get(user_url(colleague)))
    response = staff_client.post(f"{user_url(colleague)}/erase", {"confirm": "colleague"})

    assert page.find_all("form", cls="erase-form") == []
    assert "not erased here" in page.find("div", cls="user-actions").text
    assert redirected_to(response) == user_url(colleague)
    shown = page_of(staff_client.get(user_url(colleague)))
    assert "Staff and superuser accounts are not erased" in messages_of(shown)[0]
    assert User.objects.get(id=colleague.id).is_active


def test_erase_is_a_post_with_the_csrf_token(dana):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("staff", is_staff=True))

    without_token = client.post(f"{user_url(dana)}/erase", {"confirm": "ext-Dana-7"})
    as_get = client.get(f"{user_url(dana)}/erase", {"confirm": "ext-Dana-7"})

    assert without_token.status_code == 403 and as_get.status_code == 405
    assert User.objects.get(id=dana.id).erasure_started_at is None
    form = erase_form(client, dana)
    assert form["csrfmiddlewaretoken"]
    response = client.post(f"{user_url(dana)}/erase", {**form, "confirm": "ext-Dana-7"})
    assert redirected_to(response) == USERS
    assert not User.objects.filter(id=dana.id).exists()


def test_the_default_tenant_is_shown_on_each_row(staff_client, dana):
    row = page_of(staff_client.get(USERS, {"q": "dana"})).find("tr", cls="user-row")

    assert row.find("td").text == default_tenant().slug


def test_the_memories_group_by_entity_or_pin_as_asked(staff_client, dana):
    saved(dana, "wife", "Married to Priya", category="family", pinned=True, entities=[])
    saved(
        dana,
        "anniversary",
        "Anniversary with Priya is in May",
        entities=[{"name": "Priya", "relation": "wife", "kind": "person"}],
    )
    make_memory(dana, key="job", value="Works as a baker", category="work")

    def groups(group: str) -> dict[str, list[str]]:
        page = page_of(staff_client.get(user_url(dana), {"group": group}))
        return {
            body.attrs["data-group"]: [
                row.find(cls="key").text for row in body.find_all("tr", cls="memory")
            ]
            for body in page.find_all("tbody")
            if "data-group" in body.attrs
        }

    by_entity = groups("entity")
    assert by_entity["Priya (wife)"] == ["anniversary"]
    assert set(by_entity["about no one"]) >= {"job"}
    assert list(by_entity)[-1] == "about no one"
    by_pin = groups("pinned")
    assert list(by_pin) == ["pinned", "not pinned"]
    assert by_pin["pinned"] == ["wife"]
    assert "work" in groups("category") and "work" in groups("nonsense")
