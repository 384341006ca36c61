"""Retention (issue 47, item 3): a memory's own `expires_at` and retention rules per tenant
and project by scope and category. An expired memory is gone from recall, the tools and the
default list at once; the sweep archives it (valid_until set, an "expire" revision naming the
cause, a memory.expired event) and deletes nothing. Rules apply to existing memories of their
own tenant and project only; /api/retention-rules is for staff and review keys."""

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from config.embedded_scheduler import EmbeddedScheduler
from memories import services
from memories.accounts.tenants import default_tenant, tenant_get_or_create
from memories.models import (
    Memory,
    MemoryRevision,
    RetentionRule,
    RevisionAction,
    Scope,
    Status,
    User,
)
from memories.retention.sweep import retention_sweep
from tests.conftest import client_for, key_client, make_user, new_key
from tests.memories.helpers import assert_error
from tests.webhooks.conftest import register
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.usefixtures("no_embedder")

RULES = "/api/retention-rules"
IMPORT = "/api/memories/import"
NDJSON = "application/x-ndjson"
HOOK_URL = "https://93.184.215.14/hooks"  # a public address: no lookup, never sent here


def save(api, key, value, **fields):
    response = api.post("/api/memories", {"key": key, "value": value, **fields}, format="json")
    assert response.status_code in (200, 201), response.content[:500]
    return response.json()


def later(**delta) -> str:
    return (timezone.now() + timedelta(**delta)).isoformat()


def expire_now(memory_id) -> None:
    """Current since an hour ago, its expires_at passed a minute ago (set in the database:
    nobody waits)."""
    now = timezone.now()
    Memory.objects.filter(id=memory_id).update(
        valid_from=now - timedelta(hours=1), expires_at=now - timedelta(minutes=1)
    )


def backdate(memory_ids, days: int) -> None:
    """Current since `days` ago, as an old memory would be."""
    Memory.objects.filter(id__in=memory_ids).update(
        valid_from=timezone.now() - timedelta(days=days)
    )


def recalled(api, query: str) -> dict[str, set[str]]:
    """The ids each way of recall gives for `query`."""
    search = api.get("/api/memories/search", {"q": query, "min_relevance": 0})
    context = api.post("/api/memories/context", {"query": query}, format="json")
    tool_recall = api.post(
        "/api/tools/memory_recall", {"query": query, "min_relevance": 0}, format="json"
    )
    tool_context = api.post("/api/tools/memory_context", {"query": query}, format="json")
    listed = api.get("/api/memories")
    for response in (search, context, tool_recall, tool_context, listed):
        assert response.status_code == 200, response.content[:500]
    return {
        "search": {m["id"] for m in search.json()["data"]},
        "context": {m["id"] for m in context.json()["memories"]},
        "memory_recall": {m["id"] for m in tool_recall.json()["data"]},
        "memory_context": {m["id"] for m in tool_context.json()["memories"]},
        "list": {m["id"] for m in listed.json()["data"]},
    }


def everywhere(*ids) -> dict[str, set[str]]:
    return {
        way: set(ids) for way in ("search", "context", "memory_recall", "memory_context", "list")
    }


@pytest.fixture
def hook(staff_api):
    """A webhook endpoint of the default tenant for memory.expired (rows only: nothing is
    sent inside a test's transaction)."""
    return register(staff_api, HOOK_URL, ["memory.expired"])


def expired_events() -> list[dict]:
    deliveries = WebhookDelivery.objects.filter(event_type="memory.expired").order_by("created_at")
    return [json.loads(delivery.body)["data"] for delivery in deliveries]


# --- a memory's own expires_at -----------------------------------------------------------------


def test_expires_at_is_saved_and_read_back(api):
    saved = save(api, "trip", "In Lisbon this week", expires_at="2099-01-31T23:59:00Z")

    assert saved["expires_at"] == "2099-01-31T23:59:00Z"
    assert saved["retention_expires_at"] is None and saved["retention_rule_id"] is None
    assert api.get(f"/api/memories/{saved['id']}").json()["expires_at"] == saved["expires_at"]
    assert save(api, "city", "Lives in Porto")["expires_at"] is None


def test_a_memory_past_its_expires_at_is_gone_from_recall_and_the_list_at_once(api):
    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=7), pinned=True)
    city = save(api, "home", "Lisbon flat near the river")
    assert recalled(api, "Lisbon") == everywhere(trip["id"], city["id"])

    expire_now(trip["id"])

    assert recalled(api, "Lisbon") == everywhere(city["id"])
    # Not yet archived: it still is what it was, listed by its status, readable by its id.
    assert Memory.objects.get(id=trip["id"]).status == Status.ACTIVE
    active = api.get("/api/memories", {"status": "active"}).json()["data"]
    assert {m["id"] for m in active} == {trip["id"], city["id"]}
    assert api.get(f"/api/memories/{trip['id']}").status_code == 200


def test_the_sweep_archives_an_expired_memory_with_a_revision_and_an_event(api, hook):
    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=7))
    save(api, "home", "Lisbon flat near the river")
    expire_now(trip["id"])
    expires_at = Memory.objects.get(id=trip["id"]).expires_at
    memories, revisions = Memory.objects.count(), MemoryRevision.objects.count()

    assert retention_sweep() == {"computed": 0, "expired": 1}

    memory = Memory.objects.get(id=trip["id"])
    assert memory.status == Status.ARCHIVED and memory.valid_until == expires_at
    assert memory.deleted_at is None and Memory.objects.count() == memories
    revision = memory.revisions.order_by("-id").first()
    assert revision.action == RevisionAction.EXPIRE and revision.actor is None
    assert revision.note.startswith("expired: its expires_at")
    assert revision.before["status"] == "active" and revision.after["status"] == "archived"
    assert MemoryRevision.objects.count() == revisions + 1
    [event] = expired_events()
    assert event["id"] == trip["id"] and event["status"] == "archived"
    assert event["expired_by"] == "expires_at"
    history = api.get(f"/api/memories/{trip['id']}/history").json()["data"]
    assert [entry["action"] for entry in history] == ["expire", "create"]


def test_a_second_sweep_changes_nothing(api, hook):
    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=7))
    expire_now(trip["id"])
    retention_sweep()
    revisions = MemoryRevision.objects.count()

    assert retention_sweep() == {"computed": 0, "expired": 0}

    assert MemoryRevision.objects.count() == revisions
    assert len(expired_events()) == 1


def test_recall_as_of_a_moment_before_it_expired_still_finds_it(api, openai_embedder):
    # As of a past moment, archived memories are found by meaning (the keyword index holds
    # current ones): an embedder is needed.
    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=7))
    expire_now(trip["id"])  # current from an hour ago until a minute ago
    retention_sweep()
    before = (timezone.now() - timedelta(minutes=5)).isoformat()

    found = api.get("/api/memories/search", {"q": "Lisbon", "as_of": before, "min_relevance": 0})
    now = api.get("/api/memories/search", {"q": "Lisbon", "min_relevance": 0})

    assert [m["id"] for m in found.json()["data"]] == [trip["id"]]
    assert now.json()["data"] == []


def test_saving_an_expired_fact_again_writes_a_new_memory(api):
    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=7))
    expire_now(trip["id"])

    again = save(api, "trip", "In Lisbon this week", expires_at=later(days=3))

    assert again["id"] != trip["id"] and again["created"] is True
    assert recalled(api, "Lisbon") == everywhere(again["id"])


def test_a_save_of_the_current_fact_with_an_expires_at_sets_it(api):
    trip = save(api, "trip", "In Lisbon this week")
    when = later(days=2)

    again = save(api, "trip", "In Lisbon this week", expires_at=when)
    same = save(api, "trip", "In Lisbon this week")

    assert again["id"] == trip["id"] and again["created"] is False
    stored = Memory.objects.get(id=trip["id"]).expires_at
    assert stored is not None and stored.isoformat() == when
    assert same["expires_at"] == again["expires_at"]  # a save that names none keeps it


def test_restoring_an_expired_memory_makes_it_current_without_its_passed_time(api):
    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=7))
    expire_now(trip["id"])
    retention_sweep()

    response = api.post(f"/api/memories/{trip['id']}/restore")

    assert response.status_code == 200, response.content[:500]
    assert response.json()["status"] == "active" and response.json()["expires_at"] is None
    assert recalled(api, "Lisbon") == everywhere(trip["id"])


@pytest.mark.parametrize("when", ["2001-01-01T00:00:00Z", "yesterday"])
def test_a_create_with_a_passed_or_bad_expires_at_is_a_400_naming_it(api, when):
    response = api.post(
        "/api/memories", {"key": "trip", "value": "In Lisbon", "expires_at": when}, format="json"
    )

    assert_error(response, 400, "expires_at")
    assert not Memory.objects.exists()


def test_a_batch_item_with_a_passed_expires_at_is_named_by_its_index(api):
    response = api.post(
        "/api/memories/batch",
        {
            "memories": [
                {"key": "a", "value": "Fact a", "expires_at": later(days=1)},
                {"key": "b", "value": "Fact b", "expires_at": "2001-01-01T00:00:00Z"},
            ]
        },
        format="json",
    )

    assert_error(response, 400, "memories[1].expires_at")
    assert not Memory.objects.exists()


def test_an_edit_sets_clears_and_refuses_a_passed_expires_at(api):
    trip = save(api, "trip", "In Lisbon this week")
    url = f"/api/memories/{trip['id']}"

    set_ = api.patch(url, {"expires_at": later(days=1)}, format="json")
    passed = api.patch(url, {"expires_at": "2001-01-01T00:00:00Z"}, format="json")
    cleared = api.patch(url, {"expires_at": None}, format="json")

    assert set_.status_code == 200 and set_.json()["expires_at"] is not None
    assert_error(passed, 400, "expires_at")
    assert cleared.status_code == 200 and cleared.json()["expires_at"] is None
    history = api.get(f"{url}/history").json()["data"]
    before = parse_datetime(history[0]["before"]["expires_at"])
    assert before == parse_datetime(set_.json()["expires_at"])


def test_a_put_of_the_get_body_of_an_expired_memory_is_taken(api):
    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=1))
    expire_now(trip["id"])
    url = f"/api/memories/{trip['id']}"
    body = api.get(url).json()

    response = api.put(url, {**body, "importance": 0.9}, format="json")

    assert response.status_code == 200, response.content[:500]
    assert response.json()["expires_at"] == body["expires_at"]


def test_the_memory_save_tool_takes_an_expires_at(api):
    saved = api.post(
        "/api/tools/memory_save",
        {"key": "trip", "value": "In Lisbon this week", "expires_at": later(days=5)},
        format="json",
    )
    passed = api.post(
        "/api/tools/memory_save",
        {"key": "x", "value": "y", "expires_at": "2001-01-01T00:00:00Z"},
        format="json",
    )
    lasting = api.post(
        "/api/tools/memory_save", {"key": "z", "value": "w", "expires_at": None}, format="json"
    )

    assert saved.status_code == 201 and saved.json()["memory"]["expires_at"] is not None
    assert_error(passed, 400, "expires_at")
    assert lasting.status_code == 201 and lasting.json()["memory"]["expires_at"] is None
    [tool] = [
        t for t in api.get("/api/tools").json()["data"] if t["function"]["name"] == "memory_save"
    ]
    parameters = tool["function"]["parameters"]
    assert parameters["properties"]["expires_at"]["type"] == ["string", "null"]
    assert "expires_at" in parameters["required"]


def test_export_and_import_keep_expires_at(api, other_api):
    when = "2099-06-30T12:00:00Z"
    save(api, "trip", "In Lisbon in June", expires_at=when)
    save(api, "home", "Lives in Porto")
    exported = b"".join(api.get("/api/memories/export").streaming_content).decode()
    assert all("retention_expires_at" in json.loads(line) for line in exported.splitlines())

    response = other_api.post(IMPORT, exported, content_type=NDJSON)

    assert response.status_code == 200, response.content[:500]
    mine = other_api.get("/api/memories").json()["data"]
    assert {m["key"]: m["expires_at"] for m in mine} == {"trip": when, "home": None}
    again = other_api.post(IMPORT, exported, content_type=NDJSON).json()
    assert again["created"] == 0 and again["updated"] == 0, again


def test_an_imported_memory_whose_time_has_passed_is_left_out_then_archived(api):
    line = {"key": "trip", "value": "In Lisbon in 2001", "expires_at": "2001-01-31T00:00:00Z"}

    response = api.post(IMPORT, json.dumps(line) + "\n", content_type=NDJSON)

    assert response.json()["created"] == 1, response.content[:500]
    assert api.get("/api/memories").json()["data"] == []
    assert retention_sweep()["expired"] == 1
    assert Memory.objects.get().status == Status.ARCHIVED


# --- retention rules ---------------------------------------------------------------------------


@pytest.fixture
def acme():
    """Another tenant, its review key and its end user bob."""
    tenant = tenant_get_or_create(slug="acme")
    review = key_client(new_key("review", tenant=tenant), None)
    bob = key_client(new_key("read", "write", tenant=tenant), "bob")
    return tenant, review, bob


def rule(api, **fields):
    response = api.post(RULES, fields, format="json")
    assert response.status_code == 201, response.content[:500]
    return response.json()


def test_a_rule_applies_to_existing_memories_of_its_tenant_at_once_and_at_the_sweep(
    api, owner, staff_api, acme, hook
):
    _, _, bob = acme
    topic = services.topic_create(user=owner, title="trip planning")
    passing = services.memory_create(
        actor=None, scope=Scope.SESSION, user=owner, topic=topic, key="hotel", value="Lisbon hotel"
    )
    lasting = save(api, "home", "Lisbon flat near the river")
    theirs = save(bob, "hotel", "Lisbon hotel by the sea")
    backdate([passing.id, lasting["id"], theirs["id"]], days=40)

    created = rule(staff_api, scope="session", days=30)

    assert created["scope"] == "session" and created["days"] == 30
    assert created["project_id"] is None and created["category"] == ""
    passing.refresh_from_db()
    assert passing.retention_rule_id is not None
    assert str(passing.retention_rule_id) == created["id"]
    assert passing.retention_expires_at == passing.valid_from + timedelta(days=30)
    # Left out of recall from the rule's save on, before any sweep.
    search = api.get(
        "/api/memories/search", {"q": "Lisbon", "min_relevance": 0, "topic_id": topic.id}
    )
    assert [m["id"] for m in search.json()["data"]] == [lasting["id"]]

    result = retention_sweep()

    assert result["expired"] == 1
    passing.refresh_from_db()
    assert passing.status == Status.ARCHIVED
    assert passing.valid_until == passing.valid_from + timedelta(days=30)
    revision = passing.revisions.order_by("-id").first()
    assert revision.action == RevisionAction.EXPIRE
    assert f"retention rule {created['id']}" in revision.note and "30 days" in revision.note
    assert revision.after["retention_rule_id"] == created["id"]
    [event] = expired_events()
    assert event["id"] == str(passing.id) and event["expired_by"] == "retention_rule"
    assert event["retention_rule_id"] == created["id"]
    # Another tenant's memories and other scopes are untouched.
    assert Memory.objects.get(id=theirs["id"]).status == Status.ACTIVE
    assert Memory.objects.get(id=theirs["id"]).retention_expires_at is None
    assert Memory.objects.get(id=lasting["id"]).status == Status.ACTIVE


def test_a_project_rule_applies_to_its_project_only(api, owner, staff_api):
    alpha = services.project_create(owner=owner, name="alpha")
    beta = services.project_create(owner=owner, name="beta")
    in_alpha = save(
        api, "deadline", "Alpha ships Friday", scope="project", project_id=str(alpha.id)
    )
    in_beta = save(api, "deadline", "Beta ships Monday", scope="project", project_id=str(beta.id))
    mine = save(api, "editor", "Uses vim")
    backdate([in_alpha["id"], in_beta["id"], mine["id"]], days=10)

    rule(staff_api, project_id=str(alpha.id), days=7)
    retention_sweep()

    assert Memory.objects.get(id=in_alpha["id"]).status == Status.ARCHIVED
    assert Memory.objects.get(id=in_beta["id"]).status == Status.ACTIVE
    assert Memory.objects.get(id=mine["id"]).status == Status.ACTIVE


def test_the_shortest_matching_rule_decides(api, staff_api):
    trip = save(api, "flight", "Flies to Lisbon on Monday", category="travel")
    other = save(api, "diet", "Is vegetarian", category="food")
    backdate([trip["id"], other["id"]], days=20)

    everything = rule(staff_api, days=730)
    travel = rule(staff_api, category="travel", days=14)

    flight, diet = Memory.objects.get(key="flight"), Memory.objects.get(key="diet")
    assert str(flight.retention_rule_id) == travel["id"]
    assert flight.retention_expires_at == flight.valid_from + timedelta(days=14)
    assert str(diet.retention_rule_id) == everything["id"]
    assert recalled(api, "Lisbon")["list"] == {other["id"]}


def test_a_rule_changed_or_deleted_applies_to_existing_memories(api, staff_api):
    trip = save(api, "flight", "Flies to Lisbon on Monday", category="travel")
    backdate([trip["id"]], days=20)
    travel = rule(staff_api, category="travel", days=14)
    assert api.get("/api/memories").json()["data"] == []

    longer = staff_api.patch(f"{RULES}/{travel['id']}", {"days": 30}, format="json")

    assert longer.status_code == 200 and longer.json()["days"] == 30
    assert [m["id"] for m in api.get("/api/memories").json()["data"]] == [trip["id"]]
    assert staff_api.patch(f"{RULES}/{travel['id']}", {"days": 7}, format="json").status_code == 200
    assert api.get("/api/memories").json()["data"] == []

    assert staff_api.delete(f"{RULES}/{travel['id']}").status_code == 204

    memory = Memory.objects.get(id=trip["id"])
    assert memory.retention_expires_at is None and memory.retention_rule_id is None
    assert [m["id"] for m in api.get("/api/memories").json()["data"]] == [trip["id"]]
    assert retention_sweep()["expired"] == 0


def test_an_edit_into_a_category_a_rule_has_expired_leaves_recall_at_once(api, staff_api):
    memory = save(api, "flight", "Flies to Lisbon on Monday")
    backdate([memory["id"]], days=20)
    rule(staff_api, category="travel", days=14)
    assert recalled(api, "Lisbon")["list"] == {memory["id"]}

    api.patch(f"/api/memories/{memory['id']}", {"category": "travel"}, format="json")

    assert recalled(api, "Lisbon") == everywhere()


def test_a_memory_saved_after_a_rule_gets_its_time_at_the_sweep(api, staff_api):
    travel = rule(staff_api, category="travel", days=14)
    trip = save(api, "flight", "Flies to Lisbon on Monday", category="travel")
    assert Memory.objects.get(id=trip["id"]).retention_expires_at is None

    assert retention_sweep() == {"computed": 1, "expired": 0}

    memory = Memory.objects.get(id=trip["id"])
    assert str(memory.retention_rule_id) == travel["id"]
    assert memory.retention_expires_at == memory.valid_from + timedelta(days=14)
    assert retention_sweep() == {"computed": 0, "expired": 0}


def test_a_backdated_save_a_rule_has_expired_is_never_recalled(api, staff_api):
    rule(staff_api, category="travel", days=14)

    old = save(
        api,
        "flight",
        "Flew to Lisbon",
        category="travel",
        valid_from=(timezone.now() - timedelta(days=30)).isoformat(),
    )

    assert old["retention_expires_at"] is not None
    assert recalled(api, "Lisbon") == everywhere()


def test_nothing_expires_without_rules_or_expires_at(api):
    saved = save(api, "home", "Lisbon flat near the river")
    backdate([saved["id"]], days=5000)

    assert retention_sweep() == {"computed": 0, "expired": 0}
    assert recalled(api, "Lisbon") == everywhere(saved["id"])


def test_the_rules_api_lists_shows_and_keeps_each_tenant_to_its_own(staff_api, acme):
    _, acme_review, _ = acme
    mine = rule(staff_api, scope="session", days=30)
    theirs = rule(acme_review, scope="session", days=5)

    assert [r["id"] for r in staff_api.get(RULES).json()["data"]] == [mine["id"]]
    assert [r["id"] for r in acme_review.get(RULES).json()["data"]] == [theirs["id"]]
    assert staff_api.get(f"{RULES}/{mine['id']}").json() == mine
    for response in (
        staff_api.get(f"{RULES}/{theirs['id']}"),
        staff_api.patch(f"{RULES}/{theirs['id']}", {"days": 1}, format="json"),
        staff_api.delete(f"{RULES}/{theirs['id']}"),
        staff_api.get(f"{RULES}/not-a-uuid"),
    ):
        assert_error(response, 404, "id")
    assert RetentionRule.objects.get(id=theirs["id"]).days == 5


def test_the_rules_api_needs_the_review_scope_or_staff(api, db):
    for client in (api, key_client(new_key("read", "write"), None)):
        assert client.get(RULES).status_code == 403
        assert client.post(RULES, {"days": 1}, format="json").status_code == 403
    no_review = key_client(new_key("read", "write"), None).get(RULES)
    assert_error(no_review, 403, "scope")
    assert not RetentionRule.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"days": 0}, "days"),
        ({"days": 36_501}, "days"),
        ({"days": "ten"}, "days"),
        ({}, "days"),
        ({"days": 5, "scope": "everything"}, "scope"),
        ({"days": 5, "project_id": "2b1c4b5e-8d7f-4a6b-9c1d-0e2f3a4b5c6d"}, "project_id"),
        ({"days": 5, "tenant": "acme"}, "tenant"),
    ],
)
def test_a_bad_rule_is_a_400_naming_the_field(staff_api, body, field):
    assert_error(staff_api.post(RULES, body, format="json"), 400, field)
    assert not RetentionRule.objects.exists()


def test_another_users_project_of_another_tenant_is_no_project_of_yours(staff_api, acme):
    tenant, _, _ = acme
    bob = User.objects.create(username="acme-bob", tenant=tenant, external_id="bob")
    their_project = services.project_create(owner=bob, name="theirs")

    response = staff_api.post(
        RULES, {"days": 5, "project_id": str(their_project.id)}, format="json"
    )

    assert_error(response, 400, "project_id")


def test_a_second_rule_for_the_same_memories_is_a_409_naming_the_first(staff_api):
    first = rule(staff_api, scope="session", category="travel", days=30)

    response = staff_api.post(
        RULES, {"scope": "session", "category": "travel", "days": 7}, format="json"
    )

    body = assert_error(response, 409)
    assert first["id"] in body["detail"]
    assert RetentionRule.objects.count() == 1


def test_the_admin_saves_a_rule_and_its_time_reaches_the_memories(api, admin_client):
    trip = save(api, "flight", "Flies to Lisbon on Monday", category="travel")
    backdate([trip["id"]], days=20)
    tenant = default_tenant()

    response = admin_client.post(
        "/admin/memories/retentionrule/add/",
        {"tenant": tenant.id, "scope": "", "category": "travel", "days": 14},
    )

    assert response.status_code == 302, response.content[:2000]
    assert Memory.objects.get(id=trip["id"]).retention_expires_at is not None
    bad = admin_client.post(
        "/admin/memories/retentionrule/add/",
        {"tenant": tenant.id, "scope": "", "category": "food", "days": 0},
    )
    assert bad.status_code == 200 and RetentionRule.objects.count() == 1


# --- the periodic task -------------------------------------------------------------------------


def test_the_sweep_is_on_the_beat_schedule():
    entry = settings.CELERY_BEAT_SCHEDULE["expire-memories"]

    assert entry["task"] == "memories.tasks.expire_memories_task"
    assert entry["schedule"] == settings.RETENTION_SWEEP_INTERVAL_SECONDS == 300


def test_the_embedded_scheduler_runs_the_sweep_every_interval(tmp_path):
    now = [1000.0]
    sent = []
    scheduler = EmbeddedScheduler(
        settings.CELERY_BEAT_SCHEDULE,
        submit=lambda task, args, kwargs, on_done: sent.append(task),
        lock_path=tmp_path / "scheduler.lock",
        clock=lambda: now[0],
    )
    [entry] = [e for e in scheduler.entries if e.name == "expire-memories"]
    assert (entry.task, entry.interval) == ("memories.tasks.expire_memories_task", 300.0)
    assert scheduler.lock_take()

    scheduler.tick()
    assert "memories.tasks.expire_memories_task" not in sent
    now[0] += 300
    scheduler.tick()
    scheduler.stop()

    assert "memories.tasks.expire_memories_task" in sent


def test_the_task_runs_the_sweep(api):
    from memories.tasks import expire_memories_task

    trip = save(api, "trip", "In Lisbon this week", expires_at=later(days=7))
    expire_now(trip["id"])

    assert expire_memories_task.delay().get() == {"computed": 0, "expired": 1}
    assert Memory.objects.get(id=trip["id"]).status == Status.ARCHIVED


def test_a_staff_made_rule_is_the_default_tenants(staff_api):
    created = rule(staff_api, days=3)

    assert RetentionRule.objects.get(id=created["id"]).tenant.slug == "default"
    # Any local staff login manages the default tenant's rules.
    other_staff = client_for(make_user("someone-else", is_staff=True))
    assert [r["id"] for r in other_staff.get(RULES).json()["data"]] == [created["id"]]
