"""The dashboard's charts: what each shows, read through review.selectors and drawn by
review.charts, for the last `days` days (UTC, today included) of what the signed-in staff
administers."""

from datetime import UTC, datetime, time

from django.utils import timezone
from django.utils.timesince import timesince

from extraction.models import RunStatus
from memories.models import User
from ops.models import UsageKind
from ops.usage import latency_quantile
from review import charts
from review import selectors as review_selectors
from review.charts import Chart, Column, Series

MEMORY_CHANGES = (
    Series("created", "created"),
    Series("replaced", "replaced"),
    Series("archived", "archived"),
)
# Queued and running runs are drawn as one: both are still to end.
RUN_OUTCOMES = (
    Series("done", "done"),
    Series("failed", "failed"),
    Series("skipped", "skipped"),
    Series("unfinished", "queued or running"),
)
CALLS = (Series(UsageKind.SEARCH, "searches"), Series(UsageKind.CONTEXT, "context calls"))
LATENCIES = (
    Series("search-p95", "search p95"),
    Series("search-p50", "search p50"),
    Series("context-p95", "context p95"),
    Series("context-p50", "context p50"),
)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def dashboard_charts(*, actor: User, days: int) -> list[Chart]:
    """The five charts of the dashboard, in the order shown."""
    window = charts.days_ending(timezone.now().date(), days)
    columns = charts.day_columns(window)
    since = datetime.combine(window[0], time.min, tzinfo=UTC)
    span = f"in the last {days} days"

    def by_day(per_day: dict) -> dict[str, int]:
        return {day.isoformat(): count for day, count in per_day.items()}

    changes = review_selectors.memory_changes_per_day(actor=actor, since=since)
    runs = review_selectors.extraction_runs_per_day(actor=actor, since=since)
    runs["unfinished"] = {
        day: runs.get(RunStatus.QUEUED, {}).get(day, 0)
        + runs.get(RunStatus.RUNNING, {}).get(day, 0)
        for day in {*runs.get(RunStatus.QUEUED, {}), *runs.get(RunStatus.RUNNING, {})}
    }
    usage = review_selectors.usage_per_day(actor=actor, since=window[0])
    calls: dict[str, dict[str, int]] = {}
    latencies: dict[str, dict[str, float | None]] = {}
    totals: dict[str, str] = {}
    for kind in UsageKind:
        per_day = usage.get(kind, {})
        calls[kind] = {day.isoformat(): sum(buckets) for day, buckets in per_day.items()}
        whole = [sum(column) for column in zip(*per_day.values(), strict=True)]
        for quantile, name in ((0.95, "p95"), (0.5, "p50")):
            latencies[f"{kind}-{name}"] = {
                day.isoformat(): latency_quantile(buckets, quantile)
                for day, buckets in per_day.items()
            }
            totals[f"{kind}-{name}"] = _ms(latency_quantile(whole, quantile) if whole else None)
    queue = review_selectors.pending_by_age(actor=actor)
    latency = charts.lines(
        chart_id="latency",
        title="Search and context latency, p50 and p95",
        unit="ms",
        columns=columns,
        series=LATENCIES,
        values=latencies,
        totals=totals,
        empty_text=f"No search or context call was answered {span}.",
    )
    latency.note = (
        f"The legend's figures are of the last {days} days. Latency: the service's time to "
        "answer, read from buckets 5 ms wide up to 20 ms, 10 ms up to 50 ms, then wider."
    )
    age = charts.stacked_bars(
        chart_id="queue-age",
        title="Pending review by age",
        unit="pending memories",
        columns=[Column(name, label) for name, label, _ in review_selectors.QUEUE_AGES],
        series=[Series("pending", "pending")],
        values={"pending": {name: queue[name] for name, _, _ in review_selectors.QUEUE_AGES}},
        empty_text="No memory is waiting for review.",
        column_name="age",
        what="waiting for review",
    )
    if queue["oldest"] is not None:
        age.note = f"The oldest has waited {timesince(queue['oldest'])}."
    return [
        charts.stacked_bars(
            chart_id="memory-changes",
            title="Memories created, replaced and archived",
            unit="memories per day",
            columns=columns,
            series=MEMORY_CHANGES,
            values={name: by_day(per_day) for name, per_day in changes.items()},
            empty_text=f"No memory was created, replaced or archived {span}.",
            what=span,
        ),
        charts.stacked_bars(
            chart_id="extraction-runs",
            title="Extraction runs by outcome",
            unit="runs per day",
            columns=columns,
            series=RUN_OUTCOMES,
            values={name: by_day(per_day) for name, per_day in runs.items()},
            empty_text=f"No extraction ran {span}.",
            what=span,
        ),
        charts.stacked_bars(
            chart_id="calls",
            title="Searches and context calls",
            unit="calls per day",
            columns=columns,
            series=CALLS,
            values=calls,
            empty_text=f"No search or context call was answered {span}.",
            what=span,
        ),
        latency,
        age,
    ]
