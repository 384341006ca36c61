"""The dashboard's charts (issue 48, item 3) through the test client: the test's own actions
(memories saved, replaced and archived through the API, extraction runs, searches and context
calls) come back as the SVG's bars and points, read from their data attributes; a review
key's account sees its own tenant's figures only."""

from datetime import timedelta
from uuid import uuid4

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus, SourceKind
from memories import services
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
from memories.models import Memory, MemoryRevision, User
from ops.models import DailyUsage, UsageKind
from ops.usage import usage_record
from tests.conftest import key_client
from tests.memories.helpers import make_memory, make_pending
from tests.review.html import Element, page_of

DASHBOARD = "/review/"


def today() -> str:
    return timezone.now().date().isoformat()


def days_ago(days: int) -> str:
    return (timezone.now() - timedelta(days=days)).date().isoformat()


def chart(page: Element, name: str) -> Element:
    return page.find("figure", cls="chart", data_chart=name)


def bars(figure: Element, column: str = "day") -> dict[tuple[str, str], int]:
    """{(series, day or age): count} of the chart's bars."""
    return {
        (rect.attrs["data-series"], rect.attrs[f"data-{column}"]): int(rect.attrs["data-count"])
        for rect in figure.find_all("rect", cls="bar")
    }


def points(figure: Element) -> dict[tuple[str, str], float]:
    """{(series, day): milliseconds} of the chart's points."""
    return {
        (circle.attrs["data-series"], circle.attrs["data-day"]): float(circle.attrs["data-ms"])
        for circle in figure.find_all("circle", cls="point")
    }


def save(api, key: str, value: str):
    response = api.post("/api/memories", {"key": key, "value": value}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def run(status: str, *, age: timedelta = timedelta(minutes=5), user=None) -> ExtractionRun:
    created = ExtractionRun.objects.create(
        task_id=str(uuid4()),
        source_kind=SourceKind.TOPIC,
        source_id=uuid4(),
        status=status,
        user=user,
    )
    now = timezone.now()
    at = now - age
    if age < timedelta(days=1):
        # A run of today stays on today's bar: just after midnight UTC, five minutes ago is
        # yesterday (this test failed when a run started at 00:01).
        at = max(at, now.replace(hour=0, minute=0, second=0, microsecond=0))
    ExtractionRun.objects.filter(id=created.id).update(created_at=at)
    return created


# --- Memories ----------------------------------------------------------------------------------


def test_memories_created_replaced_and_archived_are_charted_per_day(staff_client, api, owner):
    save(api, "pet", "Has a dog called Rex")
    home = save(api, "home", "Lives in Berlin")
    save(api, "home", "Moved to Lisbon")  # a new value of the key: Berlin is replaced
    job = save(api, "job", "Works as a nurse")
    services.memory_archive(memory_id=job["id"], actor=owner)
    # One created three days ago.
    old = save(api, "sport", "Plays tennis")
    MemoryRevision.objects.filter(memory_id=old["id"]).update(
        created_at=timezone.now() - timedelta(days=3)
    )

    figure = chart(page_of(staff_client.get(DASHBOARD)), "memory-changes")

    assert bars(figure) == {
        ("created", today()): 4,
        ("replaced", today()): 1,
        ("archived", today()): 1,
        ("created", days_ago(3)): 1,
    }
    assert Memory.objects.get(id=home["id"]).status == "archived"
    legend = {li.attrs["data-series"]: li.find(cls="total").text for li in figure.find_all("li")}
    assert legend == {"created": "5", "replaced": "1", "archived": "1"}


def test_a_bar_is_as_tall_as_its_count_on_the_charts_scale(staff_client, api):
    for i in range(4):
        save(api, f"fact {i}", f"Value number {i}")
    MemoryRevision.objects.filter(memory__key="fact 0").update(
        created_at=timezone.now() - timedelta(days=1)
    )

    figure = chart(page_of(staff_client.get(DASHBOARD)), "memory-changes")
    heights = {
        rect.attrs["data-day"]: float(rect.attrs["height"]) for rect in figure.find_all("rect")
    }

    # 3 today, 1 yesterday: the scale's top is 5 (of 1, 2, 5, 10...).
    assert heights[today()] == pytest.approx(3 * heights[days_ago(1)], abs=0.2)
    assert [tick.text for tick in figure.find_all("text", cls="y-tick")] == ["0", "5"]


# --- Extraction runs ---------------------------------------------------------------------------


def test_extraction_runs_are_charted_per_day_by_outcome(staff_client):
    run(RunStatus.DONE)
    run(RunStatus.DONE)
    run(RunStatus.FAILED)
    run(RunStatus.SKIPPED)
    run(RunStatus.QUEUED)
    run(RunStatus.RUNNING, age=timedelta(minutes=1))
    run(RunStatus.FAILED, age=timedelta(days=2))
    run(RunStatus.DONE, age=timedelta(days=40))  # outside the 30 days

    figure = chart(page_of(staff_client.get(DASHBOARD)), "extraction-runs")

    assert bars(figure) == {
        ("done", today()): 2,
        ("failed", today()): 1,
        ("skipped", today()): 1,
        ("unfinished", today()): 2,
        ("failed", days_ago(2)): 1,
    }


# --- Searches and context calls ----------------------------------------------------------------


def test_searches_and_context_calls_are_charted_with_their_p50_and_p95(staff_client, api, owner):
    make_memory(owner, key="pet", value="Has a dog called Rex")
    for query in ("dog", "pet", "Rex"):
        assert api.get("/api/memories/search", {"q": query}).status_code == 200
    assert api.post("/api/memories/context", {"query": "dog"}, format="json").status_code == 200

    page = page_of(staff_client.get(DASHBOARD))
    calls = chart(page, "calls")
    latency = points(chart(page, "latency"))

    assert bars(calls) == {("search", today()): 3, ("context", today()): 1}
    assert set(latency) == {
        (series, today()) for series in ("search-p50", "search-p95", "context-p50", "context-p95")
    }
    assert 0 < latency[("search-p50", today())] <= latency[("search-p95", today())]


def test_the_latency_points_are_read_from_the_days_buckets(staff_client):
    yesterday = (timezone.now() - timedelta(days=1)).date()
    # 100 searches yesterday: 50 of 0-5 ms, 40 of 5-10 ms, 10 of 20-30 ms.
    for seconds, times in ((0.003, 50), (0.007, 40), (0.025, 10)):
        for _ in range(times):
            usage_record(kind=UsageKind.SEARCH, tenant_id=None, seconds=seconds, day=yesterday)

    figure = chart(page_of(staff_client.get(DASHBOARD)), "latency")

    assert points(figure) == {
        ("search-p50", yesterday.isoformat()): 5.0,
        ("search-p95", yesterday.isoformat()): 25.0,
    }
    legend = {li.attrs["data-series"]: li.find(cls="total").text for li in figure.find_all("li")}
    assert legend["search-p95"] == "25 ms" and legend["context-p95"] == "—"


# --- The review queue's age --------------------------------------------------------------------


def test_the_review_queues_age_is_charted_by_bucket_with_the_oldest(staff_client, owner):
    ages = {"new": timedelta(minutes=5), "hours": timedelta(hours=3), "days": timedelta(days=3)}
    ages |= {"week": timedelta(days=10), "weeks": timedelta(days=20)}
    for key, age in ages.items():
        pending = make_pending(owner, key=key, value=f"Waiting {key}")
        Memory.objects.filter(id=pending.id).update(created_at=timezone.now() - age)
    make_memory(owner, key="done", value="Not pending")

    figure = chart(page_of(staff_client.get(DASHBOARD)), "queue-age")

    assert bars(figure, column="age") == {
        ("pending", "hour"): 1,
        ("pending", "day"): 1,
        ("pending", "week"): 1,
        ("pending", "older"): 2,
    }
    assert "The oldest has waited 2 weeks, 6 days." in figure.find(cls="chart-note").text


# --- Window, empty state, accessibility --------------------------------------------------------


def test_days_chooses_the_window_among_7_30_and_90(staff_client, api):
    recent = save(api, "pet", "Has a dog called Rex")
    older = save(api, "home", "Lives in Berlin")
    MemoryRevision.objects.filter(memory_id=older["id"]).update(
        created_at=timezone.now() - timedelta(days=20)
    )
    MemoryRevision.objects.filter(memory_id=recent["id"]).update(
        created_at=timezone.now() - timedelta(days=60)
    )

    def shown(query: str) -> set[str]:
        page = page_of(staff_client.get(DASHBOARD + query))
        return {day for _, day in bars(chart(page, "memory-changes"))}

    assert shown("?days=7") == set()
    assert shown("") == {days_ago(20)}
    assert shown("?days=90") == {days_ago(20), days_ago(60)}
    assert shown("?days=1000") == shown("?days=30") == {days_ago(20)}
    page = page_of(staff_client.get(DASHBOARD + "?days=90"))
    assert page.find("h2", id="charts-heading").text == "The last 90 days"
    assert page.find("a", aria_current="true").text == "90 days"


def test_a_quiet_dashboard_says_each_chart_has_nothing_yet(staff_client):
    page = page_of(staff_client.get(DASHBOARD))

    empty = {
        figure.attrs["data-chart"]: figure.find(cls="chart-empty").text
        for figure in page.find_all("figure", cls="chart")
    }
    assert empty == {
        "memory-changes": "No memory was created, replaced or archived in the last 30 days.",
        "extraction-runs": "No extraction ran in the last 30 days.",
        "calls": "No search or context call was answered in the last 30 days.",
        "latency": "No search or context call was answered in the last 30 days.",
        "queue-age": "No memory is waiting for review.",
    }
    assert page.find_all("svg") == []


def test_each_chart_is_a_labelled_image_with_a_title_a_description_and_a_unit(staff_client, owner):
    make_pending(owner, key="pet", value="Has a cat")
    run(RunStatus.DONE)

    page = page_of(staff_client.get(DASHBOARD))

    svgs = page.find_all("svg")
    assert len(svgs) == 3  # changes, runs and the queue; no call was answered
    for svg in svgs:
        assert svg.attrs["role"] == "img"
        assert svg.attrs["viewbox"] == "0 0 400 200"
        title_id, desc_id = svg.attrs["aria-labelledby"].split()
        assert svg.find("title", id=title_id).text
        assert svg.find("desc", id=desc_id).text
        assert svg.find("text", cls="unit").text
    runs = chart(page, "extraction-runs").find("desc").text
    assert runs == (
        "Extraction runs by outcome: 1 done, 0 failed, 0 skipped, 0 queued or running "
        "in the last 30 days."
    )


def test_the_charts_use_no_inline_style_or_script(staff_client, api, owner):
    """The review pages' Content-Security-Policy refuses both."""
    save(api, "pet", "Has a dog called Rex")
    api.get("/api/memories/search", {"q": "dog"})
    make_pending(owner, key="city", value="Lives in Porto")

    page = page_of(staff_client.get(DASHBOARD))

    assert not [e for e in page.iter() if "style" in e.attrs or e.tag == "style"]
    assert all("src" in script.attrs for script in page.find_all("script"))


def test_the_dashboards_queries_do_not_grow_with_the_days_and_data(staff_client, api, owner):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert staff_client.get(DASHBOARD + "?days=90").status_code == 200
        return len(captured)

    before = queries()
    for i in range(5):
        save(api, f"fact {i}", f"Value {i}")
        api.get("/api/memories/search", {"q": f"value {i}"})
        run(RunStatus.DONE, age=timedelta(days=i * 10))
        make_pending(owner, key=f"pending {i}", value=f"Pending {i}")

    assert queries() == before


# --- Tenants -----------------------------------------------------------------------------------


def test_a_review_key_of_another_tenant_does_not_see_this_tenants_figures(db):
    accounts = {}
    for slug, searches in (("acme", 3), ("globex", 1)):
        tenant = tenant_get_or_create(slug=slug)
        key, _ = api_key_create(name=f"{slug} review", scopes=["review"], tenant=tenant)
        accounts[slug] = key.account
        _, raw_key = api_key_create(name=f"{slug} app", scopes=["read", "write"], tenant=tenant)
        app = key_client(raw_key, "u1")
        save(app, "pet", f"{slug} pet")
        user = User.objects.get(tenant=tenant, external_id="u1")
        make_pending(user, key="city", value=f"{slug} city")
        run(RunStatus.FAILED, user=user)
        for _ in range(searches):
            assert app.get("/api/memories/search", {"q": "pet"}).status_code == 200
    run(RunStatus.DONE)  # of no tenant: a local staff login's only
    usage_record(kind=UsageKind.CONTEXT, tenant_id=None, seconds=0.01)

    for slug, created, searches in (("acme", 2, 3), ("globex", 2, 1)):
        client = Client()
        client.force_login(accounts[slug])
        page = page_of(client.get(DASHBOARD))

        assert bars(chart(page, "memory-changes")) == {("created", today()): created}, slug
        assert bars(chart(page, "extraction-runs")) == {("failed", today()): 1}, slug
        assert bars(chart(page, "calls")) == {("search", today()): searches}, slug
        assert bars(chart(page, "queue-age"), column="age") == {("pending", "hour"): 1}, slug

    staff = User.objects.create_user("boss", password="pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = page_of(client.get(DASHBOARD))
    assert bars(chart(page, "calls")) == {("search", today()): 4, ("context", today()): 1}
    assert bars(chart(page, "extraction-runs")) == {
        ("failed", today()): 2,
        ("done", today()): 1,
    }
    assert DailyUsage.objects.count() == 3
