"""The dashboard's charts as plain geometry for templates/review/chart.html, which draws them
as inline SVG: no script and no style attribute (the review pages' Content-Security-Policy
allows neither); colours come from review.css by the series' class. The SVG scales with its
viewBox (WIDTH x HEIGHT, in which the text is 12 units high), so a chart is as readable on a
390 px phone as on a laptop.

Every bar and point carries what it shows as data attributes (data-day or data-age,
data-count, data-ms) and a <title> a screen reader or a hover reads; the chart as a whole has
a <title> and a <desc> with its totals."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

WIDTH, HEIGHT = 400, 200
LEFT, RIGHT, TOP, BOTTOM = 40, 8, 24, 22
PLOT_WIDTH, PLOT_HEIGHT = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
BAR_SHARE = 0.7  # of a column's width; the rest is the gap between bars
MAX_BAR_WIDTH = 48  # a few columns (the queue's ages) get bars, not blocks
MAX_DAY_LABELS = 4


def _n(value: float) -> str:
    """A coordinate as SVG reads it, whatever the locale: 12.3."""
    return f"{value:.1f}"


@dataclass(frozen=True)
class Column:
    key: str  # what data-day / data-age holds: an ISO day or a bucket's name
    label: str


@dataclass(frozen=True)
class Series:
    key: str  # the CSS class, and data-series
    label: str


@dataclass(frozen=True)
class Rect:
    x: str
    y: str
    width: str
    height: str
    series: str
    column: str
    count: int
    title: str


@dataclass(frozen=True)
class Point:
    x: str
    y: str
    series: str
    column: str
    value: str
    title: str


@dataclass(frozen=True)
class Polyline:
    series: str
    points: str


@dataclass(frozen=True)
class Tick:
    position: str
    label: str


@dataclass(frozen=True)
class LegendItem:
    series: str
    label: str
    total: str


@dataclass
class Chart:
    id: str
    title: str
    unit: str  # the y axis' label
    summary: str  # <desc>: what the chart says in a sentence
    empty_text: str
    column_name: str  # "day" or "age": the data attribute naming a bar's column
    note: str = ""  # a line below the chart
    legend: list[LegendItem] = field(default_factory=list)
    rects: list[Rect] = field(default_factory=list)
    lines: list[Polyline] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    x_labels: list[Tick] = field(default_factory=list)
    is_empty: bool = False
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    plot_bottom: int = TOP + PLOT_HEIGHT
    label_y: int = HEIGHT - 6


def days_ending(last: date, count: int) -> list[date]:
    """`count` days up to and including `last`, oldest first."""
    return [last - timedelta(days=count - 1 - i) for i in range(count)]


def day_columns(days: Sequence[date]) -> list[Column]:
    return [Column(day.isoformat(), f"{day:%b} {day.day}") for day in days]


def nice_ceiling(value: float, *, whole: bool = False) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten at least `value` (1 for nothing);
    without 2.5 for `whole` numbers (counts), so their half-way tick is whole too (but 5's)."""
    if value <= 1:
        return 1.0
    power = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 5, 10) if whole else (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)  # pragma: no cover


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _y(value: float, top: float) -> float:
    return TOP + PLOT_HEIGHT * (1 - value / top)


def _y_ticks(top: float, *, whole: bool = False) -> list[Tick]:
    halves = top > 1 and not (whole and (top / 2) % 1)
    values = (0.0, top / 2, top) if halves else (0.0, top)
    return [Tick(_n(_y(value, top)), _number(value)) for value in values]


def _column_x(index: int, count: int) -> float:
    """The centre of column `index` of `count`."""
    return LEFT + PLOT_WIDTH * (index + 0.5) / count


def _x_labels(columns: Sequence[Column]) -> list[Tick]:
    """Every label when they fit (8 or fewer), else the first, the last and two between."""
    count = len(columns)
    if count <= 8:
        shown = list(range(count))
    else:
        shown = sorted({round(i * (count - 1) / (MAX_DAY_LABELS - 1)) for i in range(4)})
    return [Tick(_n(_column_x(i, count)), columns[i].label) for i in shown]


def stacked_bars(
    *,
    chart_id: str,
    title: str,
    unit: str,
    columns: Sequence[Column],
    series: Sequence[Series],
    values: Mapping[str, Mapping[str, int]],
    empty_text: str,
    column_name: str = "day",
    what: str = "",
) -> Chart:
    """Bars per column, one segment per series stacked in the order given. `values` maps a
    series' key to {column key: count}; a column without a count has none."""
    totals = {s.key: sum(values.get(s.key, {}).values()) for s in series}
    chart = Chart(
        id=chart_id,
        title=title,
        unit=unit,
        summary=f"{title}: "
        + ", ".join(f"{totals[s.key]} {s.label}" for s in series)
        + (f" {what}" if what else "")
        + ".",
        empty_text=empty_text,
        column_name=column_name,
        legend=[LegendItem(s.key, s.label, str(totals[s.key])) for s in series],
        is_empty=not any(totals.values()),
    )
    if chart.is_empty:
        return chart
    stacks = [sum(values.get(s.key, {}).get(c.key, 0) for s in series) for c in columns]
    top = nice_ceiling(max(stacks), whole=True)
    band = PLOT_WIDTH / len(columns)
    bar_width = min(MAX_BAR_WIDTH, max(1.0, band * BAR_SHARE))
    for index, column in enumerate(columns):
        x = LEFT + band * index + (band - bar_width) / 2
        below = 0
        for s in series:
            count = values.get(s.key, {}).get(column.key, 0)
            if not count:
                continue
            y_top, y_bottom = _y(below + count, top), _y(below, top)
            chart.rects.append(
                Rect(
                    x=_n(x),
                    y=_n(y_top),
                    width=_n(bar_width),
                    height=_n(y_bottom - y_top),
                    series=s.key,
                    column=column.key,
                    count=count,
                    title=f"{column.label}: {count} {s.label}",
                )
            )
            below += count
    chart.y_ticks = _y_ticks(top, whole=True)
    chart.x_labels = _x_labels(columns)
    return chart


def lines(
    *,
    chart_id: str,
    title: str,
    unit: str,
    columns: Sequence[Column],
    series: Sequence[Series],
    values: Mapping[str, Mapping[str, float | None]],
    totals: Mapping[str, str],
    empty_text: str,
) -> Chart:
    """One line per series through its columns' values; a column without a value breaks the
    line (a day without calls has no latency). `totals` gives each legend item's figure."""
    known = [v for s in series for v in values.get(s.key, {}).values() if v is not None]
    chart = Chart(
        id=chart_id,
        title=title,
        unit=unit,
        summary=f"{title}: " + ", ".join(f"{s.label} {totals.get(s.key, '—')}" for s in series),
        empty_text=empty_text,
        column_name="day",
        legend=[LegendItem(s.key, s.label, totals.get(s.key, "—")) for s in series],
        is_empty=not known,
    )
    if chart.is_empty:
        return chart
    top = nice_ceiling(max(known))
    for s in series:
        segment: list[str] = []
        for index, column in enumerate(columns):
            value = values.get(s.key, {}).get(column.key)
            if value is None:
                if len(segment) > 1:
                    chart.lines.append(Polyline(s.key, " ".join(segment)))
                segment = []
                continue
            x, y = _n(_column_x(index, len(columns))), _n(_y(value, top))
            segment.append(f"{x},{y}")
            chart.points.append(
                Point(
                    x=x,
                    y=y,
                    series=s.key,
                    column=column.key,
                    value=_number(round(value, 1)),
                    title=f"{column.label}: {s.label} {_number(round(value, 1))} {unit}",
                )
            )
        if len(segment) > 1:
            chart.lines.append(Polyline(s.key, " ".join(segment)))
    chart.y_ticks = _y_ticks(top)
    chart.x_labels = _x_labels(columns)
    return chart
