"""manage.py consolidate_memories (what Celery beat runs): near-duplicates of one user and scope
are proposed as merges, memories nobody used for long as archivals; nothing changes until a
reviewer approves, and running again proposes nothing twice. Vectors come from the fake
provider's bag of words, so how alike two texts are is plain to see: sharing all words but
one of eight is 0.94, one of seven 0.86 (CONSOLIDATION_SIMILARITY is 0.9 here)."""

from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.utils import timezone

from memories import services
from memories.models import (
    ConsolidationProposal,
    Memory,
    MemoryRevision,
    ProposalKind,
    ProposalStatus,
    Scope,
    Status,
)
from memories.recall.access import memory_record_access
from tests.conftest import client_for, end_user, make_user
from tests.erasure import tables_mentioning, traces_of
from tests.memories.helpers import make_memory

DARK = "Prefers dark mode in every editor"  # with the key "ui": 7 words
DARK_WINDOW = "Prefers dark mode in every editor window"  # 7 of 8 shared: 0.94
LIKES_DARK = "Likes dark mode in every editor"  # 6 of 7 shared with DARK: 0.86


@pytest.fixture(autouse=True)
def consolidation(settings, openai_embedder):
    settings.CONSOLIDATION_SIMILARITY = 0.9
    settings.CONSOLIDATION_STALE_DAYS = 180
    settings.CONSOLIDATION_STALE_MAX_IMPORTANCE = 0.8
    settings.CONSOLIDATION_MAX_GROUP = 5
    return settings


def consolidate(*args: str) -> str:
    out = StringIO()
    call_command("consolidate_memories", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def proposals(**filters) -> list[ConsolidationProposal]:
    return list(ConsolidationProposal.objects.filter(**filters).order_by("kind", "created_at"))


def members(proposal: ConsolidationProposal) -> set:
    return set(proposal.memories.values_list("id", flat=True))


def unused_for(memory: Memory, days: int, *, recalled_days_ago: int | None = None) -> Memory:
    """Make a memory look created and last updated `days` ago (and recalled, if given)."""
    long_ago = timezone.now() - timedelta(days=days)
    recalled = (
        timezone.now() - timedelta(days=recalled_days_ago)
        if recalled_days_ago is not None
        else None
    )
    Memory.objects.filter(id=memory.id).update(
        created_at=long_ago, updated_at=long_ago, last_accessed_at=recalled
    )
    memory.refresh_from_db()
    return memory


def snapshot() -> list[tuple]:
    return list(
        Memory.objects.order_by("id").values_list(
            "id", "key", "value", "status", "importance", "updated_at", "deleted_at"
        )
    )


# --- Merges ------------------------------------------------------------------------------------


def test_near_duplicates_of_one_user_and_scope_are_proposed_as_a_merge(owner):
    old = make_memory(owner, key="ui", value=DARK, importance=0.9)
    new = make_memory(owner, key="ui", value=DARK_WINDOW, importance=0.4)
    make_memory(owner, key="ui", value=LIKES_DARK)
    make_memory(owner, key="city", value="Lives in Lisbon")
    before = snapshot()

    output = consolidate()

    [merge] = proposals()
    assert (merge.kind, merge.status, merge.user) == (ProposalKind.MERGE, "pending", owner)
    assert members(merge) == {old.id, new.id}
    assert merge.keep_id == new.id  # the one updated last
    assert (merge.key, merge.value) == ("ui", DARK_WINDOW)
    assert merge.similarity == pytest.approx(7 / 56**0.5, abs=1e-3)
    assert "alike at 0.94" in merge.reason
    assert snapshot() == before  # nothing changes before a reviewer approves
    assert "Proposed 1 merges and 0 archivals" in output


def test_a_merge_never_spans_scopes_or_users(owner, other):
    project = services.project_create(owner=owner, name="Editor plugin")
    make_memory(owner, key="ui", value=DARK)
    make_memory(owner, key="ui", value=DARK_WINDOW, scope=Scope.PROJECT, project=project)
    make_memory(other, key="ui", value=DARK_WINDOW)

    consolidate()

    assert proposals() == []


def test_every_pair_of_a_merge_is_alike_not_only_a_chain(owner):
    first = make_memory(owner, key="ui", value=DARK)
    middle = make_memory(owner, key="ui", value=DARK_WINDOW)
    last = make_memory(owner, key="ui", value=DARK_WINDOW + " tab")  # 0.94 to middle, 0.88 to first

    consolidate()

    [merge] = proposals()
    assert members(merge) == {middle.id, last.id}
    assert first.id not in members(merge)


def test_a_group_of_three_alike_memories_is_one_merge(owner):
    base = "Prefers dark mode in every code editor and terminal on all machines"
    memories = [make_memory(owner, key="ui", value=text) for text in (base, base + " now")]
    memories.append(make_memory(owner, key="ui", value=base + " too"))

    consolidate()

    [merge] = proposals()
    assert members(merge) == {memory.id for memory in memories}
    assert merge.keep_id == memories[-1].id


def test_pending_and_archived_memories_are_left_alone(owner):
    make_memory(owner, key="ui", value=DARK)
    make_memory(owner, key="ui", value=DARK_WINDOW, status=Status.PENDING_REVIEW)
    archived = make_memory(owner, key="ui", value=DARK_WINDOW + " tab")
    services.memory_archive(memory_id=archived.id, actor=owner)

    consolidate()

    assert proposals() == []


def test_without_vectors_nothing_is_proposed_as_a_merge(owner, settings):
    settings.EMBEDDER = "none"
    make_memory(owner, key="ui", value=DARK)
    make_memory(owner, key="ui", value=DARK_WINDOW)

    consolidate()

    assert proposals() == []


# --- Archivals ---------------------------------------------------------------------------------


def test_a_memory_nobody_recalled_or_updated_for_long_is_proposed_for_archival(owner):
    stale = unused_for(make_memory(owner, key="car", value="Drives a Fiat"), 200)
    unused_for(make_memory(owner, key="pet", value="Has a cat"), 200, recalled_days_ago=20)
    unused_for(make_memory(owner, key="name", value="Is called Dana", importance=0.9), 400)
    make_memory(owner, key="city", value="Lives in Lisbon")
    before = snapshot()

    consolidate()

    [archival] = proposals()
    assert (archival.kind, archival.keep_id, archival.key) == (ProposalKind.ARCHIVE, None, "")
    assert members(archival) == {stale.id}
    assert archival.reason.startswith("not recalled or updated for 200 days (last on ")
    assert snapshot() == before


def test_stale_days_0_proposes_no_archival(owner, settings):
    settings.CONSOLIDATION_STALE_DAYS = 0
    unused_for(make_memory(owner, key="car", value="Drives a Fiat"), 2000)

    consolidate()

    assert proposals() == []


def test_stale_near_duplicates_are_proposed_as_a_merge_only(owner):
    old = unused_for(make_memory(owner, key="ui", value=DARK), 300)
    new = unused_for(make_memory(owner, key="ui", value=DARK_WINDOW), 250)

    consolidate()

    [merge] = proposals()
    assert (merge.kind, members(merge)) == (ProposalKind.MERGE, {old.id, new.id})


# --- Running again -----------------------------------------------------------------------------


def test_running_twice_proposes_nothing_new_for_the_same_memories(owner):
    make_memory(owner, key="ui", value=DARK)
    make_memory(owner, key="ui", value=DARK_WINDOW)
    unused_for(make_memory(owner, key="car", value="Drives a Fiat"), 200)
    consolidate()
    first = {p.id for p in proposals()}

    output = consolidate()

    assert {p.id for p in proposals()} == first and len(first) == 2
    assert "Proposed 0 merges and 0 archivals" in output


def test_a_rejected_proposal_is_not_made_again_until_its_memories_change(owner, staff):
    dark = make_memory(owner, key="ui", value=DARK)
    make_memory(owner, key="ui", value=DARK_WINDOW)
    consolidate()
    [merge] = proposals()
    client_for(staff).post(f"/api/admin/consolidation-proposals/{merge.id}/reject")

    consolidate()
    assert proposals(status=ProposalStatus.PENDING) == []

    services.memory_update(memory=dark, actor=owner, changes={"importance": 0.7})
    consolidate()
    [again] = proposals(status=ProposalStatus.PENDING)
    assert again.id != merge.id and members(again) == members(merge)


def test_a_pending_proposal_whose_memories_changed_is_withdrawn(owner):
    dark = make_memory(owner, key="ui", value=DARK)
    make_memory(owner, key="ui", value=DARK_WINDOW)
    stale = unused_for(make_memory(owner, key="car", value="Drives a Fiat"), 200)
    consolidate()
    archival, merge = proposals()  # by kind: archive, merge
    services.memory_archive(memory_id=dark.id, actor=owner)
    memory_record_access(memory_ids=[stale.id])

    output = consolidate()

    merge.refresh_from_db()
    archival.refresh_from_db()
    assert (merge.status, merge.decided_by) == (ProposalStatus.REJECTED, None)
    assert merge.decision_note == f"withdrawn: memory {dark.id} is archived now"
    assert archival.status == ProposalStatus.REJECTED
    assert archival.decision_note == f"withdrawn: memory {stale.id} was recalled after the proposal"
    assert proposals(status=ProposalStatus.PENDING) == []
    assert "withdrew 2 proposals" in output


# --- The command -------------------------------------------------------------------------------


def test_a_dry_run_lists_what_it_would_propose_and_writes_nothing(owner):
    old = make_memory(owner, key="ui", value=DARK)
    new = make_memory(owner, key="ui", value=DARK_WINDOW)
    stale = unused_for(make_memory(owner, key="car", value="Drives a Fiat"), 200)
    revisions = MemoryRevision.objects.count()

    output = consolidate("--dry-run")

    assert proposals() == []
    assert MemoryRevision.objects.count() == revisions
    assert f"merge [{old.id}, {new.id}]" in output
    assert f"archive [{stale.id}]: not recalled" in output
    assert "Would propose 1 merges and 1 archivals." in output
    assert "Drives a Fiat" not in output  # ids, not memory text


def test_user_limits_the_run_to_those_users(owner, other):
    for user in (owner, other):
        make_memory(user, key="ui", value=DARK)
        make_memory(user, key="ui", value=DARK_WINDOW)
    other.external_id = "ext-other"
    other.save(update_fields=["external_id"])

    consolidate("--user", "owner")
    assert [p.user for p in proposals()] == [owner]
    consolidate("--user", "ext-other", "--user", str(owner.id))
    assert sorted(p.user.username for p in proposals()) == ["other", "owner"]


def test_an_unknown_user_stops_the_command(db):
    with pytest.raises(CommandError, match="No user 'nobody'"):
        consolidate("--user", "nobody")


def test_celery_beat_runs_consolidation_every_interval():
    entry = django_settings.CELERY_BEAT_SCHEDULE["consolidate-memories"]

    assert entry["task"] == "memories.tasks.consolidate_memories_task"
    assert entry["schedule"] == django_settings.CONSOLIDATION_INTERVAL_SECONDS == 86400


def test_erasing_a_user_erases_their_proposals(staff):
    marker = "wombat4411"
    user = end_user(make_user(f"user-{marker}"))  # /api/users erases end users only
    make_memory(user, key="ui", value=f"{DARK} {marker}")
    make_memory(user, key="ui", value=f"{DARK_WINDOW} {marker}")
    unused_for(make_memory(user, key="car", value=f"Drives a Fiat {marker}"), 200)
    consolidate()
    [archival, merge] = proposals()
    client_for(staff).post(f"/api/admin/consolidation-proposals/{archival.id}/approve")
    needles = traces_of(user, marker)
    assert "memories_consolidationproposal" in tables_mentioning(needles)

    response = client_for(staff).delete(f"/api/users/{user.id}")

    assert response.status_code == 204, response.content
    assert tables_mentioning(needles) == set()
    assert ConsolidationProposal.objects.count() == 0


def test_a_user_with_nothing_to_consolidate_gets_no_proposal(db):
    user = make_user("quiet")
    make_memory(user, key="city", value="Lives in Lisbon")

    assert "Proposed 0 merges and 0 archivals" in consolidate()
    assert proposals() == []
