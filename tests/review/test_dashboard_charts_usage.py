"""The usage the dashboard charts (issue 48, item 3): every search and context call answered
through the REST API, the tools and MCP counted per day and tenant with its latency bucket
(ops.usage), p50 and p95 read from the buckets, and no count lost to concurrent calls."""

import threading
from datetime import date

import pytest
from django.db import connection, transaction
from django.utils import timezone

from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
from memories.models import User
from memories.tools import ToolContext, memory_context_tool, memory_recall_tool
from ops.models import LATENCY_BUCKETS, DailyUsage, UsageKind
from ops.usage import BUCKET_FIELDS, bucket_of, buckets_of, latency_quantile, usage_record
from tests.conftest import key_client
from tests.memories.helpers import make_memory
from tests.memories.mcp_support import calls, http_server, over_http, result_body


def usage_rows() -> dict[tuple[str, object], int]:
    """{(kind, tenant id): count} of today's rows, checking each count is its buckets' sum."""
    rows = {}
    for row in DailyUsage.objects.filter(day=timezone.now().date()):
        assert row.count == sum(getattr(row, name) for name in BUCKET_FIELDS), row
        rows[(row.kind, row.tenant_id)] = rows.get((row.kind, row.tenant_id), 0) + row.count
    return rows


# --- Counted where searches and context calls are answered ------------------------------------


def test_searches_and_context_calls_through_the_api_are_counted_per_tenant(api, owner, db):
    make_memory(owner, key="pet", value="Has a dog called Rex")
    acme = tenant_get_or_create(slug="acme")
    _, raw_key = api_key_create(name="acme backend", scopes=["read", "write"], tenant=acme)
    acme_api = key_client(raw_key, "alice")

    for _ in range(3):
        assert api.get("/api/memories/search", {"q": "dog"}).status_code == 200
    assert api.post("/api/memories/context", {"query": "dog"}, format="json").status_code == 200
    assert acme_api.get("/api/memories/search", {"q": "dog"}).status_code == 200
    for _ in range(2):
        response = acme_api.post("/api/memories/context", {"query": "dog"}, format="json")
        assert response.status_code == 200

    assert usage_rows() == {
        (UsageKind.SEARCH, None): 3,
        (UsageKind.CONTEXT, None): 1,
        (UsageKind.SEARCH, acme.id): 1,
        (UsageKind.CONTEXT, acme.id): 2,
    }


def test_a_refused_call_is_not_counted(api, db):
    assert api.get("/api/memories/search", {"q": "dog", "top_k": "many"}).status_code == 400
    assert api.post("/api/memories/context", {}, format="json").status_code == 400
    assert api.get("/api/memories/search", {"q": "dog"}).status_code == 200

    assert usage_rows() == {(UsageKind.SEARCH, None): 1}


def test_the_tools_count_as_searches_and_context_calls(api, owner, db):
    make_memory(owner, key="pet", value="Has a dog called Rex")

    assert api.post("/api/tools/memory_recall", {"query": "dog"}, format="json").status_code == 200
    assert api.post("/api/tools/memory_context", {"query": "dog"}, format="json").status_code == 200
    assert api.post("/api/tools/memory_context", {"query": "cat"}, format="json").status_code == 200
    # The others are neither.
    assert api.post("/api/tools/memory_profile", {}, format="json").status_code == 200

    assert usage_rows() == {(UsageKind.SEARCH, None): 1, (UsageKind.CONTEXT, None): 2}


def test_a_call_made_with_count_usage_false_is_not_counted(owner, db):
    """What the review pages run for staff (the recall playground) is not usage."""
    make_memory(owner, key="pet", value="Has a dog called Rex")
    context = ToolContext()

    found = memory_recall_tool(user=owner, context=context, query="dog", top_k=3, count_usage=False)
    hint = memory_context_tool(user=owner, context=context, query="dog", top_k=3, count_usage=False)

    memory_recall_tool(user=owner, context=context, query="dog", top_k=3)

    assert found["data"] and "Rex" in hint["hint"]
    assert usage_rows() == {(UsageKind.SEARCH, None): 1}


@pytest.mark.django_db(transaction=True)
def test_mcp_calls_over_http_are_counted_for_the_keys_tenant():
    tenant = tenant_get_or_create(slug="acme")
    _, raw_key = api_key_create(name="acme backend", scopes=["read", "write"], tenant=tenant)
    headers = {"Authorization": f"Bearer {raw_key}", "X-User-Id": "alice"}

    with http_server() as url:
        results = over_http(
            url,
            headers,
            calls(
                ("memory_save", {"key": "pet", "value": "Has a dog called Rex"}),
                ("memory_recall", {"query": "dog"}),
                ("memory_context", {"query": "dog", "top_k": None}),
                ("memory_context", {"query": "my dog", "top_k": None}),
            ),
        )

    assert not any(result.isError for result in results), [result_body(r) for r in results]
    assert User.objects.get(external_id="alice").tenant_id == tenant.id
    assert usage_rows() == {(UsageKind.SEARCH, tenant.id): 1, (UsageKind.CONTEXT, tenant.id): 2}


# --- The buckets and the quantiles -------------------------------------------------------------


def test_a_call_counts_in_the_bucket_whose_upper_edge_it_reaches():
    assert bucket_of(0.2) == "ms_0_5"
    assert bucket_of(5.0) == "ms_0_5"
    assert bucket_of(5.01) == "ms_5_10"
    assert bucket_of(27) == "ms_20_30"
    assert bucket_of(2500) == "ms_1000_2500"
    assert bucket_of(60_000) == "ms_2500_up"
    assert [name for name, _ in LATENCY_BUCKETS] == list(BUCKET_FIELDS)
    assert {f.name for f in DailyUsage._meta.fields} >= set(BUCKET_FIELDS)


def buckets(**counts: int) -> list[int]:
    return buckets_of(counts)


def test_p50_and_p95_are_interpolated_inside_the_bucket_that_holds_them():
    # 100 calls: 50 of 0-5 ms, 40 of 5-10 ms, 10 of 20-30 ms.
    known = buckets(ms_0_5=50, ms_5_10=40, ms_20_30=10)

    # The 50th call is the last of the first bucket: its upper edge.
    assert latency_quantile(known, 0.5) == pytest.approx(5.0)
    # The 95th is the 5th of the 10 in 20-30 ms: half-way.
    assert latency_quantile(known, 0.95) == pytest.approx(25.0)
    assert latency_quantile(known, 0.9) == pytest.approx(10.0)
    # One call of 12 ms: p50 half-way through 10-15 ms, p95 near its top.
    assert latency_quantile(buckets(ms_10_15=1), 0.5) == pytest.approx(12.5)
    assert latency_quantile(buckets(ms_10_15=1), 0.95) == pytest.approx(14.75)


def test_quantiles_of_no_calls_are_none_and_of_the_slowest_bucket_its_lower_edge():
    assert latency_quantile(buckets(), 0.5) is None
    assert latency_quantile(buckets(ms_0_5=1, ms_2500_up=99), 0.95) == 2500.0


def test_the_first_call_of_a_day_inserts_its_row_and_the_next_ones_add_to_it(db):
    day = date(2026, 3, 14)

    usage_record(kind=UsageKind.SEARCH, tenant_id=None, seconds=0.012, day=day)
    usage_record(kind=UsageKind.SEARCH, tenant_id=None, seconds=0.003, day=day)
    usage_record(kind=UsageKind.SEARCH, tenant_id=None, seconds=0.013, day=day)
    usage_record(kind=UsageKind.CONTEXT, tenant_id=None, seconds=0.2, day=day)

    search = DailyUsage.objects.get(day=day, kind=UsageKind.SEARCH, tenant_id=None)
    assert (search.count, search.ms_0_5, search.ms_10_15) == (3, 1, 2)
    context = DailyUsage.objects.get(day=day, kind=UsageKind.CONTEXT)
    assert (context.count, context.ms_150_250) == (1, 1)


def test_a_day_without_a_tenant_has_one_row_a_worker_only(db):
    from django.db import IntegrityError

    from ops.usage import shard_of

    day = date(2026, 3, 14)
    usage_record(kind=UsageKind.SEARCH, tenant_id=None, seconds=0.01, day=day)

    with pytest.raises(IntegrityError), transaction.atomic():
        DailyUsage.objects.create(
            day=day, kind=UsageKind.SEARCH, tenant_id=None, shard=shard_of(), count=1
        )


# --- Concurrent calls --------------------------------------------------------------------------

THREADS = 8
CALLS_PER_THREAD = 25


@pytest.mark.django_db(transaction=True)
def test_concurrent_calls_lose_no_count_even_the_first_of_the_day():
    """Threads on their own connections count into one row that none of them has yet: the
    UPDATE finds nothing, several INSERT, one wins, the others add to its row."""
    day = date(2026, 3, 14)
    tenant = tenant_get_or_create(slug="acme")
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def count_calls():
        try:
            start.wait()
            for i in range(CALLS_PER_THREAD):
                usage_record(kind=UsageKind.SEARCH, tenant_id=tenant.id, seconds=0.001 * i, day=day)
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=count_calls) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    row = DailyUsage.objects.get(day=day, tenant_id=tenant.id)
    assert row.count == THREADS * CALLS_PER_THREAD
    assert sum(buckets_of({f: getattr(row, f) for f in BUCKET_FIELDS})) == row.count
    assert row.ms_0_5 == THREADS * 6  # 0-5 ms of each thread's 25 calls


def test_each_worker_process_counts_in_a_row_of_its_own_and_the_dashboard_sums_them(
    db, staff, monkeypatch
):
    from ops import usage
    from review.selectors import usage_per_day

    for process_id, seconds in ((101, 0.004), (102, 0.012), (102, 0.012), (109, 0.3)):
        monkeypatch.setattr(usage, "shard_of", lambda process_id=process_id: process_id % 8)
        usage_record(kind=UsageKind.SEARCH, tenant_id=None, seconds=seconds)

    today = timezone.now().date()
    rows = DailyUsage.objects.filter(day=today, kind=UsageKind.SEARCH)
    # 101 and 109 share row 5 (modulo 8), 102 has row 6.
    assert sorted((row.shard, row.count) for row in rows) == [(5, 2), (6, 2)]
    buckets = usage_per_day(actor=staff, since=today)[UsageKind.SEARCH][today]
    assert sum(buckets) == 4
    assert buckets[BUCKET_FIELDS.index(bucket_of(12))] == 2
