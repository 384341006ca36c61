"""The queue shows, beside each extracted candidate, the messages it came from (quoted) and a
link to its conversation, whose page marks those messages; and it filters by source, age and
conversation."""

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit
from uuid import uuid4

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.models import Memory, Source, Status
from tests.conftest import client_for
from tests.extraction.helpers import extract, new_topic, post
from tests.memories.helpers import make_memory, make_pending
from tests.review.html import candidate_ids, page_of

QUEUE = "/review/queue"


@pytest.fixture(autouse=True)
def rules(settings):
    """No model configured: the rule-based extractor runs."""
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


@pytest.fixture
def conversation(owner) -> dict:
    """A conversation of the owner, extracted: "name" and "home" from one message, "job"
    from another."""
    api = client_for(owner)
    topic_id = new_topic(api, title="Moving to Lisbon")
    post(api, topic_id, "Hello!")
    said = post(api, topic_id, "My name is Dana and I live in Lisbon.")
    post(api, topic_id, "Welcome, Dana. How can I help?", role="assistant")
    job = post(api, topic_id, "I work as a nurse at St. Mary hospital.")
    assert extract(api, topic_id).json()["status"] == "done"
    memories = {m.key: m for m in Memory.objects.filter(user=owner)}
    return {"topic_id": topic_id, "said": said, "job": job, "memories": memories}


def card(page, memory: Memory):
    return page.find("li", data_id=str(memory.id))


def test_each_candidate_quotes_the_message_it_was_extracted_from(staff_client, conversation):
    page = page_of(staff_client.get(QUEUE))

    name = card(page, conversation["memories"]["name"]).find("aside", cls="provenance")
    job = card(page, conversation["memories"]["job"]).find("aside", cls="provenance")
    assert [q.text for q in name.find_all("blockquote", cls="quote")] == [
        "user My name is Dana and I live in Lisbon."
    ]
    assert [q.text for q in job.find_all("blockquote", cls="quote")] == [
        "user I work as a nurse at St. Mary hospital."
    ]
    assert "Moving to Lisbon" in name.find("a", cls="conversation").text


def test_the_link_opens_the_conversation_with_the_cited_message_marked(staff_client, conversation):
    name = conversation["memories"]["name"]
    queue = page_of(staff_client.get(QUEUE))
    link = card(queue, name).find("a", cls="conversation").attrs["href"]

    page = page_of(staff_client.get(link))

    said = conversation["said"]["id"]
    assert urlsplit(link).path == f"/review/conversations/topic/{conversation['topic_id']}"
    assert urlsplit(link).fragment == f"m{said}"
    messages = page.find("ol", cls="conversation").find_all("li", cls="message")
    assert [m.attrs["id"] for m in messages if "cited" in m.classes] == [f"m{said}"]
    assert len(messages) == 4
    assert "Name is Dana" in page.find("p", cls="focus").text


def test_a_candidate_without_provenance_shows_none(staff_client, owner):
    memory = make_pending(owner, key="city", value="Lives in Oslo")

    page = page_of(staff_client.get(QUEUE))

    assert card(page, memory).find_all("aside", cls="provenance") == []


def test_a_candidate_whose_model_cited_nothing_says_so_and_links_the_conversation(
    staff_client, owner
):
    topic = client_for(owner).post("/api/topics", {}, format="json").json()
    memory = make_pending(owner, key="city", value="Lives in Oslo")
    Memory.objects.filter(id=memory.id).update(source_topic_id=topic["id"])

    aside = card(page_of(staff_client.get(QUEUE)), memory).find("aside", cls="provenance")

    assert "No message was cited" in aside.find("p", cls="warn").text
    assert aside.find("a", cls="conversation")


def test_the_queue_filters_by_conversation(staff_client, owner, conversation):
    other = make_pending(owner, key="city", value="Lives in Oslo")
    link = card(page_of(staff_client.get(QUEUE)), conversation["memories"]["job"]).find(
        "a", cls="more"
    )

    page = page_of(staff_client.get(link.attrs["href"]))

    assert parse_qs(urlsplit(link.attrs["href"]).query) == {
        "source_topic": [conversation["topic_id"]]
    }
    assert set(candidate_ids(page)) == {str(m.id) for m in conversation["memories"].values()}
    assert str(other.id) not in candidate_ids(page)
    kept = page.find("form", cls="filters").form_data()
    assert kept["source_topic"] == conversation["topic_id"]


@pytest.mark.parametrize(
    ("age", "expected"),
    [
        ("hour", {"new"}),
        ("day", {"new", "hours"}),
        ("week", {"new", "hours", "days"}),
        ("older-day", {"days", "weeks"}),
        ("older-week", {"weeks"}),
        ("older-month", set()),
    ],
)
def test_the_queue_filters_by_age(staff_client, owner, age, expected):
    now = timezone.now()
    memories = {
        "new": make_pending(owner, key="a", value="Likes tea"),
        "hours": make_pending(owner, key="b", value="Likes coffee"),
        "days": make_pending(owner, key="c", value="Likes juice"),
        "weeks": make_pending(owner, key="d", value="Likes water"),
    }
    for name, ago in (("hours", timedelta(hours=5)), ("days", timedelta(days=3))):
        Memory.objects.filter(id=memories[name].id).update(created_at=now - ago)
    Memory.objects.filter(id=memories["weeks"].id).update(created_at=now - timedelta(days=20))

    page = page_of(staff_client.get(QUEUE, {"age": age}))

    assert set(candidate_ids(page)) == {str(memories[name].id) for name in expected}
    assert page.find("form", cls="filters").form_data()["age"] == age


def test_the_queue_filters_by_source(staff_client, owner, conversation):
    work = make_memory(
        owner,
        key="deploy",
        value="Deploys on Tuesdays",
        source=Source.WORK,
        status=Status.PENDING_REVIEW,
        actor=None,
    )

    page = page_of(staff_client.get(QUEUE, {"source": "work"}))

    assert candidate_ids(page) == [str(work.id)]


def test_quoting_messages_costs_two_queries_however_many_candidates(staff_client, owner):
    api = client_for(owner)

    def extracted(count: int) -> None:
        topic_id = new_topic(api)
        for n in range(count):
            post(api, topic_id, f"Remember that my locker number is {n}{n}{n}.")
        assert extract(api, topic_id).json()["status"] == "done"

    def queries() -> int:
        with CaptureQueriesContext(connection) as context:
            page_of(staff_client.get(QUEUE))
        return len(context.captured_queries)

    extracted(1)
    few = queries()
    extracted(3)
    many = Memory.objects.filter(status=Status.PENDING_REVIEW).count()

    assert many >= 3
    # Each more candidate may cost its similarity search (two queries), no more.
    assert queries() - few <= 2 * (many - 1)


def test_the_conversation_page_is_404_for_an_unknown_source(staff_client, conversation):
    topic_id = conversation["topic_id"]

    assert staff_client.get(f"/review/conversations/topic/{uuid4()}").status_code == 404
    assert staff_client.get(f"/review/conversations/work-session/{topic_id}").status_code == 404
    assert staff_client.get(f"/review/conversations/elsewhere/{topic_id}").status_code == 404
