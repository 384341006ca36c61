"""The review pages' reads, called directly on the database: the dashboard's figures, the
filtered queue, the memory to edit, the pending proposals and a memory's conversation."""

from datetime import timedelta
from uuid import uuid4

import pytest
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus, SourceKind
from memories import services
from memories.models import (
    ConsolidationProposal,
    Memory,
    Message,
    ProposalKind,
    ProposalStatus,
    Topic,
    WorkSession,
    WorkSessionMessage,
)
from review import selectors
from tests.memories.helpers import make_memory, make_pending

pytestmark = pytest.mark.django_db


def run(status: str, *, hours_ago: float) -> ExtractionRun:
    created = ExtractionRun.objects.create(
        task_id=str(uuid4()), source_kind=SourceKind.TOPIC, source_id=uuid4(), status=status
    )
    when = timezone.now() - timedelta(hours=hours_ago)
    ExtractionRun.objects.filter(id=created.id).update(created_at=when)
    return created


def day_ago():
    return timezone.now() - timedelta(days=1)


# --- Dashboard ---------------------------------------------------------------------------------


def test_run_counts_cover_the_window_and_count_skipped_runs_apart(staff):
    run(RunStatus.DONE, hours_ago=1)
    run(RunStatus.DONE, hours_ago=23)
    run(RunStatus.FAILED, hours_ago=2)
    run(RunStatus.SKIPPED, hours_ago=3)
    run(RunStatus.SKIPPED, hours_ago=4)
    run(RunStatus.FAILED, hours_ago=30)  # before the window
    run(RunStatus.DONE, hours_ago=72)

    counts = selectors.extraction_run_counts(actor=staff, since=day_ago())

    assert counts == {"total": 3, "failed": 1, "done": 2, "skipped": 2}


def test_recent_runs_leave_out_skipped_ones_newest_first_up_to_the_limit(staff):
    oldest = run(RunStatus.DONE, hours_ago=50)
    middle = run(RunStatus.FAILED, hours_ago=5)
    run(RunStatus.SKIPPED, hours_ago=1)
    newest = run(RunStatus.DONE, hours_ago=2)

    assert list(selectors.recent_extraction_runs(actor=staff, limit=2)) == [newest, middle]
    assert list(selectors.recent_extraction_runs(actor=staff, limit=10)) == [newest, middle, oldest]


def test_failed_runs_are_the_windows_failures_newest_first_up_to_the_limit(staff):
    older = run(RunStatus.FAILED, hours_ago=10)
    newer = run(RunStatus.FAILED, hours_ago=1)
    run(RunStatus.FAILED, hours_ago=30)
    run(RunStatus.DONE, hours_ago=1)

    assert list(selectors.failed_extraction_runs(actor=staff, since=day_ago(), limit=10)) == [
        newer,
        older,
    ]
    assert list(selectors.failed_extraction_runs(actor=staff, since=day_ago(), limit=1)) == [newer]


def proposal(user, status: str, kind: str = ProposalKind.ARCHIVE) -> ConsolidationProposal:
    made = ConsolidationProposal.objects.create(
        kind=kind, status=status, user=user, reason="stale", fingerprint=str(uuid4())
    )
    made.memories.add(make_memory(user, key=f"fact-{made.id}", value="Something"))
    return made


def test_only_pending_proposals_are_counted(staff, owner, other):
    proposal(owner, ProposalStatus.PENDING)
    proposal(other, ProposalStatus.PENDING)
    proposal(owner, ProposalStatus.APPROVED)
    proposal(owner, ProposalStatus.REJECTED)

    assert selectors.pending_proposal_count(actor=staff) == 2


def test_pending_proposals_are_those_waiting_of_the_kind_asked(staff, owner):
    archive = proposal(owner, ProposalStatus.PENDING)
    merge = proposal(owner, ProposalStatus.PENDING, kind=ProposalKind.MERGE)
    proposal(owner, ProposalStatus.REJECTED)

    assert set(selectors.pending_proposals(actor=staff)) == {archive, merge}
    assert list(selectors.pending_proposals(actor=staff, kind=ProposalKind.MERGE)) == [merge]


# --- Queue and edit ----------------------------------------------------------------------------


def test_the_queue_without_filters_is_every_live_pending_memory_newest_first(staff, owner, other):
    first = make_pending(owner, key="city", value="Lives in Oslo")
    second = make_pending(other, key="pet", value="Has a cat")
    make_memory(owner, key="job", value="Works as a baker")
    gone = make_pending(owner, key="car", value="Drives a Fiat")
    services.memory_delete(memory=gone, actor=owner)

    assert list(selectors.queue_memories(actor=staff, filters={})) == [second, first]


def test_the_queue_narrows_by_each_filter_given(staff, owner, other):
    topic = Topic.objects.create(user=owner)
    city = make_pending(owner, key="city", value="Lives in Oslo", source_topic=topic)
    pet = make_pending(owner, key="pet", value="Has a cat", category="animals")
    old = make_pending(other, key="car", value="Drives a Fiat")
    long_ago = timezone.now() - timedelta(days=3)
    Memory.objects.filter(id=old.id).update(created_at=long_ago)

    def queue(**filters) -> set:
        return set(selectors.queue_memories(actor=staff, filters=filters))

    assert queue(user=owner) == {city, pet}
    assert queue(category="animals") == {pet}
    assert queue(source_topic=topic.id) == {city}
    assert queue(age="day") == {city, pet}
    assert queue(age="older-day") == {old}
    assert queue(user=other, age="day") == set()
    assert queue(user=None, category="", age="") == {city, pet, old}  # empty values: all


def test_the_memory_to_edit_is_a_live_one_with_its_source(owner, staff):
    topic = Topic.objects.create(user=owner, title="Moving")
    city = make_pending(owner, key="city", value="Lives in Oslo", source_topic=topic)
    gone = make_pending(owner, key="pet", value="Has a cat")
    services.memory_delete(memory=gone, actor=owner)

    found = selectors.memory_to_edit(actor=staff, memory_id=city.id)

    assert found == city
    assert found.source_topic.title == "Moving"
    assert selectors.memory_to_edit(actor=staff, memory_id=gone.id) is None
    assert selectors.memory_to_edit(actor=staff, memory_id=uuid4()) is None


# --- Conversation ------------------------------------------------------------------------------


@pytest.fixture
def topic(owner) -> Topic:
    return Topic.objects.create(user=owner, title="Long chat")


@pytest.fixture
def said(topic) -> list[Message]:
    """Forty messages, one a minute, the last a minute ago."""
    messages = [
        Message.objects.create(topic=topic, role="user", content=f"m{n}") for n in range(40)
    ]
    now = timezone.now()
    for n, message in enumerate(messages):
        Message.objects.filter(id=message.id).update(created_at=now - timedelta(minutes=40 - n))
    return messages


def test_the_conversation_source_is_found_by_kind(owner, topic, staff):
    session = WorkSession.objects.create(user=owner)

    assert selectors.conversation_source(actor=staff, kind="topic", source_id=topic.id) == topic
    assert (
        selectors.conversation_source(actor=staff, kind="work-session", source_id=session.id)
        == session
    )
    assert (
        selectors.conversation_source(actor=staff, kind="work-session", source_id=topic.id) is None
    )
    assert selectors.conversation_source(actor=staff, kind="topic", source_id=session.id) is None
    assert selectors.conversation_source(actor=staff, kind="elsewhere", source_id=topic.id) is None


def test_a_memory_is_found_only_against_the_source_it_came_from(owner, topic):
    elsewhere = Topic.objects.create(user=owner)
    city = make_pending(owner, key="city", value="Lives in Oslo", source_topic=topic)

    assert selectors.memory_from_source(topic, city.id) == city
    assert selectors.memory_from_source(elsewhere, city.id) is None
    assert selectors.memory_from_source(WorkSession.objects.create(user=owner), city.id) is None


def test_the_window_starts_ten_messages_before_the_first_cited_one(owner, topic, said):
    cited = make_pending(
        owner,
        key="city",
        value="Lives in Oslo",
        source_topic=topic,
        source_message_ids=[said[25].id, said[20].id],
    )

    shown = selectors.conversation_window(topic, memory=cited, limit=5)

    assert shown == said[10:25]  # ten before the first cited, then five from it


def test_the_window_of_a_memory_citing_nothing_ends_when_it_was_made(owner, topic, said):
    uncited = make_pending(owner, key="city", value="Lives in Oslo", source_topic=topic)
    made = Message.objects.get(id=said[30].id).created_at
    Memory.objects.filter(id=uncited.id).update(created_at=made)
    uncited.refresh_from_db()

    assert selectors.conversation_window(topic, memory=uncited, limit=4) == said[27:31]


def test_the_window_without_a_memory_is_the_last_messages(topic, said):
    assert selectors.conversation_window(topic, memory=None, limit=3) == said[37:]
    assert selectors.conversation_message_count(topic) == 40


def test_a_work_sessions_window_and_count_are_its_own_messages(owner, topic, said):
    session = WorkSession.objects.create(user=owner)
    work = [
        WorkSessionMessage.objects.create(session=session, role="user", content=f"w{n}")
        for n in range(3)
    ]
    cited = make_pending(
        owner,
        key="deploys",
        value="Deploys go out on Tuesdays",
        source_work_session=session,
        source_message_ids=[work[1].id],
    )

    assert selectors.conversation_window(session, memory=cited, limit=10) == work
    assert selectors.conversation_message_count(session) == 3
