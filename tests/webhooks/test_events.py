"""Each event's body, as a receiver verifies it with the `standardwebhooks` package: memory
events carry the memory as the API shows it, user.erased only the user's ids; deliveries are
written in the write's transaction (a rolled-back write sends nothing) and routed to the
owner's tenant's subscribed endpoints."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from memories import consolidation, services
from memories.accounts.tenants import default_tenant, tenant_get_or_create
from memories.models import Memory, Scope, Status, User
from tests.conftest import key_client, make_user, new_key
from tests.extraction.helpers import extract, new_topic, post
from tests.webhooks.conftest import register
from webhooks.endpoints import secret_new
from webhooks.events import event_emit
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
def sent(django_capture_on_commit_callbacks):
    """Run a request and what it queued on commit (the deliveries, inline here)."""

    def run(call, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)

    return run


def one(receiver, event_type: str) -> dict:
    [event] = receiver.events(event_type)
    assert set(event) == {"type", "timestamp", "data"}
    return event["data"]


def test_memory_events_carry_the_memory_as_the_api_answers_it(endpoint, receiver, alice, sent):
    porto = sent(alice.post, "/api/memories", {"key": "home", "value": "Porto"}, format="json")
    created = one(receiver, "memory.created")
    shown = alice.get(f"/api/memories/{porto.json()['id']}").json()
    assert created == {**shown, "superseded_ids": []}
    assert created["value"] == "Porto" and created["external_user_id"] == "alice"

    lisbon = sent(alice.post, "/api/memories", {"key": "home", "value": "Lisbon"}, format="json")
    lisbon_id = lisbon.json()["id"]
    superseded = one(receiver, "memory.superseded")
    assert superseded["id"] == lisbon_id and superseded["value"] == "Lisbon"
    assert superseded["superseded_ids"] == [porto.json()["id"]]
    archived = receiver.events("memory.updated")[-1]["data"]
    assert archived["id"] == porto.json()["id"] and archived["status"] == "archived"
    assert archived["superseded_by_id"] == lisbon_id

    sent(alice.patch, f"/api/memories/{lisbon_id}", {"importance": 0.9}, format="json")
    updated = receiver.events("memory.updated")[-1]["data"]
    assert updated == alice.get(f"/api/memories/{lisbon_id}").json()

    assert sent(alice.delete, f"/api/memories/{lisbon_id}").status_code == 204
    deleted = one(receiver, "memory.deleted")
    assert deleted["id"] == lisbon_id and deleted["value"] == "Lisbon"

    assert receiver.invalid == []
    assert [event["type"] for event in receiver.events()] == [
        "memory.created",
        "memory.created",
        "memory.superseded",
        "memory.updated",
        "memory.updated",
        "memory.deleted",
    ]
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_extraction_proposes_and_review_approves_and_rejects(endpoint, receiver, alice, sent):
    sent(alice.post, "/api/memories", {"key": "home", "value": "Porto"}, format="json")
    topic = new_topic(alice)
    post(alice, topic, "I moved to Lisbon last month.")
    run = sent(extract, alice, topic).json()

    finished = one(receiver, "extraction_run.finished")
    assert finished == alice.get(f"/api/extraction-runs/{run['task_id']}").json()
    assert finished["status"] == "done" and finished["error"] is None
    proposal = one(receiver, "proposal.created")
    assert proposal["status"] == "pending_review" and "Lisbon" in proposal["value"]
    assert finished["memory_ids"] == [proposal["id"]]

    approved = sent(alice.post, f"/api/memories/{proposal['id']}/approve")
    assert approved.status_code == 200, approved.json()
    assert one(receiver, "memory.approved") == {
        **alice.get(f"/api/memories/{proposal['id']}").json()
    }
    porto = Memory.objects.get(value="Porto")
    superseded = one(receiver, "memory.superseded")
    assert superseded["id"] == proposal["id"] and superseded["superseded_ids"] == [str(porto.id)]

    user = User.objects.get(external_id="alice")
    pending = services.memory_create(
        actor=None,
        scope=Scope.USER,
        user=user,
        key="diet",
        value="Vegan",
        vector=None,
        status=Status.PENDING_REVIEW,
    )
    assert sent(alice.post, f"/api/memories/{pending.id}/reject").status_code == 200
    rejected = one(receiver, "memory.rejected")
    assert rejected["id"] == str(pending.id) and rejected["status"] == "archived"
    assert receiver.invalid == []


def test_user_erased_carries_the_ids_and_no_memory_text(endpoint, receiver, alice, sent):
    sent(alice.post, "/api/memories", {"key": "home", "value": "Porto"}, format="json")
    user = User.objects.get(external_id="alice")
    reviewer = key_client(new_key("review"), external_id=None)
    assert sent(reviewer.delete, f"/api/users/{user.id}").status_code == 204

    assert one(receiver, "user.erased") == {"id": str(user.id), "external_id": "alice"}
    # Erasing again (a retried DELETE) sends nothing more.
    services_user = User.objects.filter(id=user.id).first()
    assert services_user is None
    assert [e["type"] for e in receiver.events()] == ["memory.created", "user.erased"]


def test_a_consolidation_proposal_is_a_proposal_created(endpoint, receiver, alice, sent):
    response = sent(alice.post, "/api/memories", {"key": "car", "value": "A Fiat"}, format="json")
    long_ago = timezone.now() - timedelta(days=400)
    Memory.objects.filter(id=response.json()["id"]).update(created_at=long_ago, updated_at=long_ago)
    sent(consolidation.consolidation_scan, users=[User.objects.get(external_id="alice")])

    proposal = one(receiver, "proposal.created")
    assert proposal["object"] == "consolidation_proposal"
    assert proposal["kind"] == "archive" and proposal["status"] == "pending"
    assert proposal["memory_ids"] == [response.json()["id"]]
    # The API's proposal object itself, its memories as the API shows them.
    assert [memory["value"] for memory in proposal["memories"]] == ["A Fiat"]
    assert proposal["decided_at"] is None


def test_a_rolled_back_write_queues_and_sends_nothing(endpoint, receiver, sent):
    user = make_user("bob")

    def write_then_fail():
        with transaction.atomic():
            services.memory_create(
                actor=None, scope=Scope.USER, user=user, key="k", value="v", vector=None
            )
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        sent(write_then_fail)
    assert not WebhookDelivery.objects.exists()
    assert receiver.received == [] and not receiver.arrived.is_set()


def test_events_go_to_the_owners_tenant_and_subscribers_only(staff_api, receiver, sent):
    only_deletes = register(staff_api, receiver.url, ["memory.deleted"])
    other_tenant = tenant_get_or_create(slug="elsewhere")
    theirs = register(
        key_client(new_key("review", tenant=other_tenant), external_id=None),
        receiver.url,
        ["memory.created"],
    )
    ours = key_client(new_key("read", "write"), "carol")
    created = sent(ours.post, "/api/memories", {"key": "k", "value": "v"}, format="json")
    assert not WebhookDelivery.objects.exists()  # no default-tenant endpoint wants it

    elsewhere = key_client(new_key("read", "write", tenant=other_tenant), "carol")
    receiver.secret = theirs["secret"]
    sent(elsewhere.post, "/api/memories", {"key": "k", "value": "w"}, format="json")
    [delivery] = WebhookDelivery.objects.all()
    assert str(delivery.endpoint_id) == theirs["id"]
    assert one(receiver, "memory.created")["value"] == "w"

    receiver.secret = only_deletes["secret"]
    sent(ours.delete, f"/api/memories/{created.json()['id']}")
    assert one(receiver, "memory.deleted")["id"] == created.json()["id"]
    assert receiver.invalid == []


@pytest.mark.django_db(transaction=True)
def test_without_endpoints_an_event_costs_one_query_per_transaction(
    receiver, django_assert_num_queries
):
    def build():
        raise AssertionError("no endpoint: the event's object is never made")

    with django_assert_num_queries(1):
        assert event_emit("memory.created", user_id=None, data=build) == 0
    with transaction.atomic(), django_assert_num_queries(1):
        for _ in range(3):
            assert event_emit("memory.created", user_id=None, data=build) == 0
    # Saved by another process (nothing forgets this thread's reading): the next
    # transaction reads the endpoints again and finds it.
    receiver.secret = WebhookEndpoint.objects.create(
        tenant=default_tenant(), url=receiver.url, events=["memory.created"], secret=secret_new()
    ).secret
    with transaction.atomic():
        assert event_emit("memory.created", user_id=None, data=lambda: {"n": 1}) == 1


def test_an_import_creates_and_a_restore_supersedes(endpoint, receiver, alice, sent):
    body = '{"key": "pet", "value": "A cat named Miso"}\n'
    imported = sent(alice.post, "/api/memories/import", body, content_type="application/x-ndjson")
    assert imported.status_code == 200, imported.json()
    created = one(receiver, "memory.created")
    assert created["key"] == "pet" and created["value"] == "A cat named Miso"

    dog = sent(alice.post, "/api/memories", {"key": "pet", "value": "A dog"}, format="json")
    restored = sent(alice.post, f"/api/memories/{created['id']}/restore")
    assert restored.status_code == 200, restored.json()
    superseded = receiver.events("memory.superseded")[-1]["data"]
    assert superseded["id"] == created["id"] and superseded["status"] == "active"
    assert superseded["superseded_ids"] == [dog.json()["id"]]
    assert receiver.invalid == []


def test_a_new_entity_and_a_merge_are_events(endpoint, receiver, alice, sent):
    def save(key, value, name):
        body = {"key": key, "value": value, "entities": [{"name": name, "relation": "dog"}]}
        return sent(alice.post, "/api/memories", body, format="json")

    save("pet", "Has a dog, Pip", "Pip")
    save("walks", "Walks Pipster daily", "Pipster")
    save("vet", "Pip sees the vet", "pip")
    pip, pipster = (
        e["data"] for e in receiver.events("entity.created")
    )  # one each: the third save found Pip
    assert (pip["name"], pip["relation"], pip["memory_count"]) == ("Pip", "dog", 1)

    sent(
        alice.post,
        f"/api/entities/{pip['id']}/merge",
        {"entity_ids": [pipster["id"]]},
        format="json",
    )

    merged = one(receiver, "entity.merged")
    assert (merged["id"], merged["merged_ids"]) == (pip["id"], [pipster["id"]])
    assert merged["aliases"] == ["Pipster"] and merged["memory_count"] == 3
