"""The periodic retention sweep through the real Redis broker and a real Celery worker (a
subprocess of this test on a queue of its own, from tests/celery_support.py). The rows are
committed (transaction=True) so the worker, another process, sees them in the test database.

Nothing here is skipped: without Redis on 127.0.0.1:6379 these tests fail. Run this file
alone, never beside another worker test."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryRevision, RevisionAction, Status
from memories.tasks import expire_memories_task
from tests.celery_support import Worker, running_worker, wait_for
from tests.celery_support import broker_app as celery_broker_app
from tests.conftest import make_user
from tests.memories.helpers import make_memory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def queue_name() -> str:
    return f"retention-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def broker_app(queue_name):
    with celery_broker_app("retention-tests", queue_name) as app:
        yield app


@pytest.fixture(scope="module")
def worker(django_db_setup, tmp_path_factory, broker_app, queue_name):
    log_path = tmp_path_factory.mktemp("celery") / "worker.log"
    # No model is called: the sweep reads and writes rows only.
    with running_worker(
        broker_app,
        queue=queue_name,
        log_path=log_path,
        llm_base_url="http://127.0.0.1:9/v1",
        settings={"EMBEDDER": "none"},
    ) as process:
        yield process


def succeeded(worker: Worker, task_id: str) -> bool:
    return f"expire_memories_task[{task_id}] succeeded" in worker.log()


def test_the_worker_archives_expired_memories_once_however_often_it_runs(worker, no_embedder):
    owner = make_user("owner")
    trip = make_memory(owner, key="trip", value="In Lisbon this week")
    home = make_memory(owner, key="home", value="Lives in Lisbon")
    now = timezone.now()
    Memory.objects.filter(id=trip.id).update(
        valid_from=now - timedelta(days=3), expires_at=now - timedelta(minutes=1)
    )

    first = expire_memories_task.apply_async()
    wait_for(lambda: succeeded(worker, first.id), worker=worker, what="the first run")

    trip.refresh_from_db()
    assert trip.status == Status.ARCHIVED and trip.valid_until == now - timedelta(minutes=1)
    assert Memory.objects.get(id=home.id).status == Status.ACTIVE
    assert f"expire_memories_task[{first.id}] received" in worker.log()
    expired = MemoryRevision.objects.filter(memory=trip, action=RevisionAction.EXPIRE)
    assert expired.count() == 1

    # Two more deliveries at once (beat and a retry, say): archived once.
    again = [expire_memories_task.apply_async() for _ in range(2)]
    wait_for(
        lambda: all(succeeded(worker, result.id) for result in again),
        worker=worker,
        what="the second and third runs",
    )

    assert expired.count() == 1
    assert Memory.objects.count() == 2
