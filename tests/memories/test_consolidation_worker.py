"""The periodic consolidation task through the real Redis broker and a real Celery worker (a
subprocess of this test on a queue of its own, from tests/celery_support.py). The rows are
committed (transaction=True) so the worker, another process, sees them in the test database.

Nothing here is skipped: without Redis on 127.0.0.1:6379 these tests fail. Run this file
alone, never beside another worker test."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import ConsolidationProposal, Memory, MemoryRevision, ProposalKind, Status
from memories.tasks import consolidate_memories_task
from tests.celery_support import Worker, running_worker, wait_for
from tests.celery_support import broker_app as celery_broker_app
from tests.conftest import make_user
from tests.memories.helpers import make_memory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def queue_name() -> str:
    return f"consolidation-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def broker_app(queue_name):
    with celery_broker_app("consolidation-tests", queue_name) as app:
        yield app


@pytest.fixture(scope="module")
def worker(django_db_setup, tmp_path_factory, broker_app, queue_name):
    log_path = tmp_path_factory.mktemp("celery") / "worker.log"
    # No model is called: consolidation only reads stored vectors, here the stand-in
    # provider's, whose near-duplicates are 0.94 alike: the threshold of a remote model.
    with running_worker(
        broker_app,
        queue=queue_name,
        log_path=log_path,
        llm_base_url="http://127.0.0.1:9/v1",
        settings={"CONSOLIDATION_SIMILARITY": "0.9"},
    ) as process:
        yield process


def succeeded(worker: Worker, task_id: str) -> bool:
    return f"consolidate_memories_task[{task_id}] succeeded" in worker.log()


def test_the_worker_proposes_merges_and_archivals_once_however_often_it_runs(
    worker, openai_embedder
):
    owner = make_user("owner")
    dark = make_memory(owner, key="ui", value="Prefers dark mode in every editor")
    window = make_memory(owner, key="ui", value="Prefers dark mode in every editor window")
    car = make_memory(owner, key="car", value="Drives a Fiat")
    long_ago = timezone.now() - timedelta(days=400)
    Memory.objects.filter(id=car.id).update(created_at=long_ago, updated_at=long_ago)
    make_memory(owner, key="city", value="Lives in Lisbon")
    revisions = MemoryRevision.objects.count()

    first = consolidate_memories_task.apply_async()
    wait_for(lambda: succeeded(worker, first.id), worker=worker, what="the first run")

    proposals = {p.kind: p for p in ConsolidationProposal.objects.all()}
    assert set(proposals) == {ProposalKind.MERGE, ProposalKind.ARCHIVE}
    merge = proposals[ProposalKind.MERGE]
    assert set(merge.memories.values_list("id", flat=True)) == {dark.id, window.id}
    assert merge.keep_id == window.id and merge.status == "pending"
    assert list(proposals[ProposalKind.ARCHIVE].memories.all()) == [car]
    assert f"consolidate_memories_task[{first.id}] received" in worker.log()
    # Nothing changes before a reviewer approves.
    assert MemoryRevision.objects.count() == revisions
    assert set(Memory.objects.values_list("status", flat=True)) == {Status.ACTIVE}

    # Two more deliveries at once (beat and a retry, say): nothing is proposed twice.
    again = [consolidate_memories_task.apply_async() for _ in range(2)]
    wait_for(
        lambda: all(succeeded(worker, result.id) for result in again),
        worker=worker,
        what="the second and third runs",
    )

    assert ConsolidationProposal.objects.count() == 2
    assert set(ConsolidationProposal.objects.values_list("id", flat=True)) == {
        p.id for p in proposals.values()
    }
