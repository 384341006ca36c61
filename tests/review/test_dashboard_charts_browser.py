"""The dashboard's charts (issue 48, item 3) in a real headless Chromium at 1366 px and 390 px:
after the test's own actions every chart is drawn and visible, its bars read the counts, the
page fits the phone's width, and the Content-Security-Policy refuses nothing. Screenshots go
to tests/artifacts/ (dashboard-charts-1366px.png, dashboard-charts-390px.png)."""

from datetime import timedelta
from uuid import uuid4

import pytest
from django.utils import timezone

from extraction.models import ExtractionRun, RunStatus, SourceKind
from memories import services
from memories.models import Memory, MemoryRevision
from tests.conftest import client_for
from tests.memories.helpers import make_pending
from tests.review.test_browser import fits_the_width, log_in

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = pytest.mark.parametrize(
    "browser_page", [(1366, 900), (390, 844)], ids=["1366px", "390px"], indirect=True
)
CHARTS = ("memory-changes", "extraction-runs", "calls", "latency", "queue-age")
VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def a_month_of_use(owner) -> None:
    """Memories saved, replaced and archived, searches and context calls through the API,
    extraction runs and pending candidates, spread over the last days."""
    api = client_for(owner)
    facts = [
        ("pet", "Has a dog called Rex"),
        ("home", "Lives in Berlin"),
        ("home", "Moved to Lisbon"),
        ("job", "Works as a nurse"),
        ("diet", "Vegetarian"),
        ("sport", "Plays tennis on Sundays"),
        ("music", "Plays the cello"),
    ]
    for key, value in facts:
        response = api.post("/api/memories", {"key": key, "value": value}, format="json")
        assert response.status_code == 201
    services.memory_archive(memory_id=Memory.objects.get(key="job").id, actor=owner)
    first_five = Memory.objects.order_by("created_at")[:5]
    for days_ago, memory in zip((1, 3, 3, 8, 12), first_five, strict=True):
        MemoryRevision.objects.filter(memory=memory).update(
            created_at=timezone.now() - timedelta(days=days_ago)
        )
    for query in ("dog", "where do I live", "what do I eat", "cello", "tennis", "dog"):
        assert api.get("/api/memories/search", {"q": query}).status_code == 200
    for query in ("Any plans for the weekend?", "Dinner ideas?"):
        response = api.post("/api/memories/context", {"query": query}, format="json")
        assert response.status_code == 200
    for status, days_ago in [
        (RunStatus.DONE, 0),
        (RunStatus.DONE, 0),
        (RunStatus.FAILED, 0),
        (RunStatus.SKIPPED, 1),
        (RunStatus.DONE, 2),
        (RunStatus.DONE, 5),
        (RunStatus.FAILED, 9),
    ]:
        run = ExtractionRun.objects.create(
            task_id=str(uuid4()), source_kind=SourceKind.TOPIC, source_id=uuid4(), status=status
        )
        ExtractionRun.objects.filter(id=run.id).update(
            created_at=timezone.now() - timedelta(days=days_ago, minutes=5)
        )
    for key, age in [("city", timedelta(minutes=10)), ("car", timedelta(days=2))]:
        pending = make_pending(owner, key=key, value=f"A {key} to review")
        Memory.objects.filter(id=pending.id).update(created_at=timezone.now() - age)


@SIZES
def test_the_dashboard_draws_every_chart_from_the_tests_own_actions(
    browser_page, live_server, owner, artifacts, request
):
    a_month_of_use(owner)
    page = browser_page
    page.add_init_script(VIOLATIONS)
    log_in(page, live_server, "/review/")

    for name in CHARTS:
        figure = page.locator(f'figure.chart[data-chart="{name}"]')
        assert figure.locator("svg").is_visible(), name
        box = figure.locator("svg").bounding_box()
        assert box and box["width"] > 300 and box["height"] > 150, (name, box)
    today = timezone.now().date().isoformat()
    calls = page.locator('figure[data-chart="calls"] rect.bar')
    counted = {r.get_attribute("data-series"): r.get_attribute("data-count") for r in calls.all()}
    assert counted == {"search": "6", "context": "2"}
    assert page.locator(f'figure[data-chart="latency"] circle[data-day="{today}"]').count() == 4
    runs = page.locator('figure[data-chart="extraction-runs"] rect.bar')
    assert sum(int(r.get_attribute("data-count") or 0) for r in runs.all()) == 7
    changes = page.locator('figure[data-chart="memory-changes"] rect.bar')
    # 7 saved, 2 pending: 9 created; Berlin replaced, the job archived.
    assert sum(int(r.get_attribute("data-count") or 0) for r in changes.all()) == 11
    ages = page.locator('figure[data-chart="queue-age"] rect.bar')
    assert {r.get_attribute("data-age") for r in ages.all()} == {"hour", "week"}
    # A bar is coloured by its series (review.css), not left black.
    fill = page.locator('figure[data-chart="calls"] rect.bar.search').evaluate(
        "rect => getComputedStyle(rect).fill"
    )
    assert fill == "rgb(43, 89, 195)"
    # The axis labels stay readable on a phone: at least 11 px high as drawn.
    tick = page.locator('figure[data-chart="calls"] text.x-tick').first.bounding_box()
    assert tick and tick["height"] >= 11, tick
    size = request.node.callspec.id
    page.locator("section.charts-section").screenshot(
        path=artifacts / f"dashboard-charts-{size}.png"
    )
    page.screenshot(path=artifacts / f"dashboard-charts-{size}-full.png", full_page=True)
    assert fits_the_width(page)
    assert page.evaluate("window.__violations") == []


def test_the_day_links_redraw_the_charts_for_7_and_90_days(browser_page, live_server, owner):
    a_month_of_use(owner)
    page = browser_page
    log_in(page, live_server, "/review/")

    page.get_by_role("link", name="7 days").click()
    page.wait_for_url("**/review/?days=7")
    changes = page.locator('figure[data-chart="memory-changes"] rect.bar')
    # The job (created and archived) 8 days ago and the diet 12 days ago are not in the week.
    assert sum(int(r.get_attribute("data-count") or 0) for r in changes.all()) == 8
    assert page.locator("#charts-heading").inner_text() == "The last 7 days"
    page.get_by_role("link", name="90 days").click()
    page.wait_for_url("**/review/?days=90")
    changes = page.locator('figure[data-chart="memory-changes"] rect.bar')
    assert sum(int(r.get_attribute("data-count") or 0) for r in changes.all()) == 11
