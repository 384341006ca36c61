"""The Python client (clients/python, memory_client) against a live service: every method's
round trip, errors carrying the API's error JSON, pages followed, other users on one pool, and
429s retried after their Retry-After."""

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from memory_client import (
    AuthenticationFailed,
    BadRequest,
    MemoryClient,
    NotFound,
    PermissionDenied,
    RateLimited,
    RetryPolicy,
    ServiceUnavailable,
)
from rest_framework.throttling import ScopedRateThrottle

from memories.models import Memory
from memories.profiles.sweep import profiles_refresh
from tests.clients.python_support import live_service
from tests.conftest import new_key


@pytest.fixture
def service(transactional_db, live_server):
    return live_service(live_server)


def test_a_saved_memory_comes_back_through_every_read(service):
    with service.client() as alice:
        saved = alice.save(key="home", value="Lives in Porto", category="places")
        assert saved["created"] is True
        assert (saved["key"], saved["value"], saved["category"]) == (
            "home",
            "Lives in Porto",
            "places",
        )
        assert saved["external_user_id"] == "alice"

        assert alice.get(saved["id"])["value"] == "Lives in Porto"
        [hit] = alice.search("where do I live", top_k=3)
        assert hit["id"] == saved["id"] and hit["score"] > 0
        assert set(hit["score_parts"]) >= {"relevance", "importance", "recency"}
        context = alice.context("Where do I live?")
        assert "Lives in Porto" in context["hint"]
        assert [memory["id"] for memory in context["memories"]] == [saved["id"]]
        assert [memory["id"] for memory in alice.list()] == [saved["id"]]
        assert [line["id"] for line in alice.export()] == [saved["id"]]

        again = alice.save(key="home", value="Lives in Porto")
        assert again["created"] is False and again["id"] == saved["id"]
        edited = alice.update(saved["id"], value="Lives in Porto, near the river")
        assert edited["value"] == "Lives in Porto, near the river"
        assert Memory.objects.get(id=saved["id"]).value == "Lives in Porto, near the river"

        alice.delete(saved["id"])
        assert list(alice.list()) == []
        assert Memory.objects.get(id=saved["id"]).deleted_at is not None
        assert alice.restore(saved["id"])["status"] == "active"


def test_saving_another_value_of_a_key_replaces_the_current_memory(service):
    with service.client() as alice:
        porto = alice.save(key="home", value="Lives in Porto")
        lisbon = alice.save(key="home", value="Lives in Lisbon")

        assert lisbon["superseded_ids"] == [porto["id"]]
        assert alice.get(porto["id"])["status"] == "archived"
        assert [memory["value"] for memory in alice.list()] == ["Lives in Lisbon"]
        assert [memory["value"] for memory in alice.list(status="archived")] == ["Lives in Porto"]


def test_errors_carry_the_error_json_naming_the_field(service):
    with service.client() as alice:
        with pytest.raises(NotFound) as missing:
            alice.get(str(uuid.uuid4()))
        assert missing.value.status == 404
        assert missing.value.code == "not_found"
        assert missing.value.field == "id"
        assert missing.value.body == {
            "code": "not_found",
            "detail": "No memory with this id.",
            "fields": {"id": ["No memory with this id."]},
        }

        with pytest.raises(BadRequest) as bad:
            alice.save(key="home", value="Lives in Porto", scope="project")
        assert bad.value.status == 400
        assert bad.value.field == "project_id"
        assert bad.value.fields == {"project_id": ["Required for project scope."]}

        with pytest.raises(BadRequest) as unknown_parameter:
            alice.search("home", topc_id="x")
        assert unknown_parameter.value.field == "topc_id"

    with MemoryClient(service.url, api_key="mem_not_a_key", user_id="alice") as stranger:
        with pytest.raises(AuthenticationFailed) as unknown_key:
            stranger.get(str(uuid.uuid4()))
        assert unknown_key.value.status == 401

    with MemoryClient(service.url, api_key=new_key("read"), user_id="alice") as reader:
        with pytest.raises(PermissionDenied) as missing_scope:
            reader.save(key="home", value="Lives in Porto")
        assert missing_scope.value.status == 403
        assert "write" in missing_scope.value.detail


def test_list_follows_the_pages(service):
    with service.client() as alice:
        saved = alice.save_many(
            [{"key": f"fact {n}", "value": f"Fact number {n}"} for n in range(7)]
        )
        service.statuses.clear()

        listed = list(alice.list(page_size=3))

        assert sorted(memory["id"] for memory in listed) == sorted(memory["id"] for memory in saved)
        assert service.statuses == [200, 200, 200]  # 3 + 3 + 1


def test_with_user_acts_for_another_user_on_the_same_pool(service):
    with service.client("alice") as alice:
        bob = alice.with_user("bob")
        alice.save(key="diet", value="Vegetarian")
        bob.save(key="diet", value="Eats everything")

        assert [memory["value"] for memory in alice.list()] == ["Vegetarian"]
        assert [memory["value"] for memory in bob.list()] == ["Eats everything"]
        service.statuses.clear()
        assert list(bob.list()) != []
        assert service.statuses == [200]  # through the one httpx.Client both share
        bob.close()  # leaves the pool to the client it came from
        assert alice.get(alice.save(key="diet", value="Vegetarian")["id"])["key"] == "diet"


def test_erase_user_removes_the_user_and_their_memories(service):
    with service.client("erased-user") as client:
        memory_id = client.save(key="home", value="Lives in Porto")["id"]

        client.erase_user()

        assert not Memory.objects.filter(id=memory_id).exists()
        assert client.export() == []


def test_messages_are_mirrored_and_extracted(service, settings):
    settings.LLM_BASE_URL = ""  # the rules extractor, no model
    with service.client() as alice:
        topic = alice.create_topic("support chat")
        posted = alice.add_messages(
            topic["id"],
            [
                {"role": "user", "content": "I moved to Lisbon last month."},
                {"role": "assistant", "content": "Welcome to Lisbon!"},
            ],
        )
        assert [message["role"] for message in posted["data"]] == ["user", "assistant"]
        assert posted["extraction"]["status"] == "not_triggered"

        run = alice.extract(topic["id"])

        assert alice.extraction_run(run["task_id"])["status"] == "done"
        [pending] = alice.list(status="pending_review")
        assert "Lisbon" in pending["value"]


@pytest.fixture
def one_extraction_a_second(monkeypatch, settings):
    settings.LLM_BASE_URL = ""
    # DRF reads its rates into the throttle class once, at import.
    monkeypatch.setitem(ScopedRateThrottle.THROTTLE_RATES, "extraction", "1/second")


def test_a_throttled_request_is_sent_again_after_retry_after(service, one_extraction_a_second):
    with service.client() as alice:
        topic_id = alice.create_topic("chat")["id"]
        alice.extract(topic_id)
        service.statuses.clear()
        started = time.monotonic()

        run = alice.extract(topic_id)

        assert run["task_id"]
        assert service.statuses == [429, 202]
        assert time.monotonic() - started >= 0.9  # Retry-After: 1


def test_a_throttled_request_raises_with_retry_after_once_retries_are_spent(
    service, one_extraction_a_second
):
    with service.client(max_retries=0) as alice:
        topic_id = alice.create_topic("chat")["id"]
        alice.extract(topic_id)

        with pytest.raises(RateLimited) as throttled:
            alice.extract(topic_id)

        assert throttled.value.status == 429
        assert throttled.value.code == "throttled"
        assert throttled.value.retry_after == 1


def test_a_retry_after_longer_than_the_client_waits_is_raised_at_once(
    service, one_extraction_a_second
):
    with service.client(max_retry_wait=0.5) as alice:
        topic_id = alice.create_topic("chat")["id"]
        alice.extract(topic_id)
        service.statuses.clear()

        with pytest.raises(RateLimited):
            alice.extract(topic_id)

        assert service.statuses == [429]


def test_a_503_of_the_embedder_is_sent_again_and_writes_once(service, openai_embedder):
    # The service embeds before it opens the write's transaction: a 503 wrote nothing.
    openai_embedder.embedding_failures.append(400)  # a status the provider's SDK does not retry
    with service.client() as alice:
        saved = alice.save(key="home", value="Lives in Porto")

    assert service.statuses == [503, 201]
    assert list(Memory.objects.values_list("id", flat=True)) == [uuid.UUID(saved["id"])]


def test_a_503_raises_service_unavailable_once_retries_are_spent(service, openai_embedder):
    openai_embedder.embedding_failures.append(400)
    with service.client(max_retries=0) as alice:
        with pytest.raises(ServiceUnavailable) as unavailable:
            alice.save(key="home", value="Lives in Porto")

    assert unavailable.value.status == 503
    assert unavailable.value.code == "embedder_unavailable"
    assert not Memory.objects.exists()


def test_the_async_client_has_the_same_methods(service):
    async def scenario():
        async with service.async_client() as alice:
            saved = await alice.save(key="home", value="Lives in Porto")
            many = await alice.save_many(
                [{"key": f"fact {n}", "value": f"Fact {n}"} for n in range(3)]
            )
            assert (await alice.get(saved["id"]))["value"] == "Lives in Porto"
            [hit, *_] = await alice.search("where do I live")
            assert hit["id"] == saved["id"]
            assert "Lives in Porto" in (await alice.context("Where do I live?"))["hint"]
            listed = [memory["id"] async for memory in alice.list(page_size=2)]
            assert sorted(listed) == sorted([saved["id"], *(memory["id"] for memory in many)])
            await alice.update(saved["id"], value="Lives in Lisbon")
            await alice.delete(saved["id"])
            with pytest.raises(NotFound):
                await alice.get(saved["id"])
            bob = alice.with_user("bob")
            assert [memory async for memory in bob.list()] == []
            assert len(await alice.export(include_deleted=True)) == 4
            await alice.erase_user()
            assert await alice.export() == []

    asyncio.run(scenario())
    assert service.statuses.count(200) >= 5


def test_retry_after_is_read_as_seconds_or_an_http_date():
    past = httpx.Response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    in_five = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    later = httpx.Response(429, headers={"Retry-After": in_five})
    soon = httpx.Response(503, headers={"Retry-After": "2"})
    unnamed = httpx.Response(503)

    policy = RetryPolicy(max_retries=2, max_wait=10, backoff=0.5)
    assert policy.delay(past, 0) == 0  # a date in the past: at once
    assert 3.5 < policy.delay(later, 0) <= 5
    assert policy.delay(soon, 0) == 2
    assert policy.delay(soon, 2) is None  # retries spent
    assert policy.delay(unnamed, 1) == 1.0  # backoff 0.5 * 2**1
    assert policy.delay(httpx.Response(500), 0) is None
    assert policy.delay(httpx.Response(429, headers={"Retry-After": "60"}), 0) is None


def test_pins_and_entities_through_the_client(service):
    with service.client() as alice:
        style = alice.save(key="answer style", value="Prefers short answers", pinned=True)
        alice.save(
            key="wife's hobby",
            value="Sofia loves sailing",
            entities=[{"name": "Sofia", "kind": "person", "relation": "wife"}],
        )
        alice.save(
            key="anniversary",
            value="Anniversary in May",
            entities=[{"name": "my wife", "relation": "wife"}],
        )

        assert style["pinned"] is True
        assert "Prefers short answers" in alice.context("What is 7 times 8?")["hint"]
        [sofia] = alice.entities(relation="wife")
        assert (sofia["name"], sofia["memory_count"]) == ("Sofia", 2)
        renamed = alice.update_entity(sofia["id"], aliases=["Sofi"])
        assert renamed["aliases"] == ["Sofi"] and len(renamed["memories"]) == 2
        [hit, *_] = alice.search("what does Sofi like?")
        assert hit["key"] == "wife's hobby" and hit["score_parts"]["entity"] > 0
        assert alice.update(style["id"], pinned=False)["pinned"] is False


def test_the_profile_and_a_context_headed_by_its_summary_through_the_client(service):
    with service.client() as alice:
        alice.save(key="answer style", value="Prefers short answers", pinned=True)
        alice.save(
            key="wife",
            value="Wife is called Sofia",
            category="family",
            entities=[{"name": "Sofia", "kind": "person", "relation": "wife"}],
        )
        before = alice.profile()
        profiles_refresh()  # the periodic task, run here rather than waited for
        after = alice.profile()
        context = alice.context("What should I get my wife?", profile=True)

    assert before["summary"] is None and before["summary_stale"] is True
    assert [memory["key"] for memory in after["pinned"]] == ["answer style"]
    assert after["categories"][0]["category"] == "family"
    assert after["entities"][0]["entities"][0]["name"] == "Sofia"
    assert "Sofia (wife)" in after["summary"]["text"]
    assert context["profile"] == after["summary"]
    assert f"Profile ({after['summary']['made_at'][:10]}): Prefers short answers." in (
        context["hint"]
    )


def test_metadata_is_saved_merged_replaced_and_filtered_on_through_the_client(service):
    with service.client() as alice:
        home = alice.save(
            key="home",
            value="Lives in Porto",
            metadata={"app": "ios", "ticket": {"id": 4521, "status": "open"}},
        )
        diet, job = alice.save_many(
            [
                {"key": "diet", "value": "Vegetarian", "metadata": {"app": "web"}},
                {"key": "job", "value": "Works as a baker"},
            ]
        )
        assert home["metadata"] == {"app": "ios", "ticket": {"id": 4521, "status": "open"}}
        assert (diet["metadata"], job["metadata"]) == ({"app": "web"}, {})
        assert alice.get(diet["id"])["metadata"] == {"app": "web"}

        # update(): a merge patch; replace_metadata=True: the whole new metadata (PUT).
        merged = alice.update(home["id"], metadata={"ticket": {"status": "closed"}, "app": None})
        assert merged["metadata"] == {"ticket": {"id": 4521, "status": "closed"}}
        replaced = alice.update(home["id"], metadata={"app": "ios"}, replace_metadata=True)
        assert replaced["metadata"] == {"app": "ios"}
        assert alice.update(job["id"], importance=0.9)["metadata"] == {}

        def keys(memories):
            return sorted(memory["key"] for memory in memories)

        assert keys(alice.list(filter={"metadata.app": "ios"})) == ["home"]
        assert keys(alice.list(filter={"or": [{"metadata.app": "web"}, {"key": "job"}]})) == [
            "diet",
            "job",
        ]
        assert keys(alice.list(filter={"not": {"metadata.app": {"exists": True}}})) == ["job"]
        assert keys(alice.iter_memories(filter={"metadata.app": {"in": ["ios", "web"]}})) == [
            "diet",
            "home",
        ]
        assert keys(alice.export(filter={"metadata.app": "web"})) == ["diet"]
        found = alice.search("where does the user live", filter={"metadata.app": "web"}, top_k=5)
        assert keys(found) == ["diet"]  # among the filter's memories only, whatever they say
        context = alice.context("Where does the user live?", filter={"metadata.app": "web"})
        assert "Porto" not in context["hint"]
        assert all(memory["key"] == "diet" for memory in context["memories"])


def test_a_filter_the_service_refuses_names_its_path(service):
    with service.client() as alice:
        with pytest.raises(BadRequest) as unknown_operator:
            list(alice.list(filter={"and": [{"key": "home"}, {"metadata.app": {"like": "i"}}]}))
        assert unknown_operator.value.field == "filter.and[1].metadata.app.like"
        with pytest.raises(BadRequest) as in_a_body:
            alice.context("home", filter={"importance": {"gte": "high"}})
        assert in_a_body.value.field == "filter.importance.gte"
        with pytest.raises(BadRequest) as bad_metadata:
            alice.save(key="home", value="Porto", metadata={"a.b": 1})
        assert bad_metadata.value.field == "metadata.a.b"


def test_the_async_client_takes_metadata_and_filters(service):
    async def scenario():
        async with service.async_client() as alice:
            home = await alice.save(key="home", value="Lives in Porto", metadata={"app": "ios"})
            await alice.save(key="diet", value="Vegetarian", metadata={"app": "web"})
            merged = await alice.update(home["id"], metadata={"locale": "pt"})
            listed = [m["key"] async for m in alice.list(filter={"metadata.locale": "pt"})]
            hits = await alice.search("what do they eat", filter={"metadata.app": "web"})
            exported = await alice.export(filter={"metadata.app": "ios"})
            return merged["metadata"], listed, [hit["key"] for hit in hits], exported

    merged, listed, hits, exported = asyncio.run(scenario())
    assert merged == {"app": "ios", "locale": "pt"}
    assert listed == ["home"]
    assert hits == ["diet"]
    assert [line["key"] for line in exported] == ["home"]


def test_why_these_memories_through_the_client(service):
    with service.client() as alice:
        alice.save(key="music", value="Loves 1970s jazz fusion")
        alice.save(key="home", value="Lives in Porto")
        searched = alice.search_explained("jazz")
        context = alice.context("Who wrote the Odyssey?", explain=True)
        plain = alice.context("jazz")

    [hit] = searched["data"]
    returned = [c for c in searched["explanation"]["candidates"] if c["decision"] == "returned"]
    assert [c["memory"]["id"] for c in returned] == [hit["id"]]
    assert returned[0]["score_parts"] == hit["score_parts"]
    assert context["hint"] == ""
    reasons = {c["memory"]["key"]: c["reason"] for c in context["explanation"]["candidates"]}
    assert reasons["home"] == "not about the user and too far from the question"
    assert context["explanation"]["query"]["about_user"] is False
    assert "explanation" not in plain
