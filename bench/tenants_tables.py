"""The tables of `python -m bench served --tenants` results (bench/tenants.py): what it prints
and what bench/report.py puts in docs/benchmarks.md."""

from bench.cpu import cpu_table
from bench.report_cells import meta_lines, pct
from bench.served_tables import OPTIONAL_STAGES, OUTSIDE_STAGES, SEARCH_STAGES, data_stages

# Issue 26's targets: PostgreSQL p95 per band at a million memories of 10,000 users; the share
# of the exact nearest found (light users exactly theirs, heavy users at least 0.98).
P95_TARGET_MS = {"postgresql": 30.0}
FOUND_TARGET = {"light": 1.0, "medium": 0.98, "heavy": 0.98}


def _mark(met: bool) -> str:
    return "met" if met else "**missed**"


def markdown(results: dict) -> str:
    meta = results["meta"]
    lines = [
        f"Embedder: {meta['embedder']}."
        + (" Quick run, provisional." if meta["quick"] else "")
        + (
            " Served with GC_BETWEEN_REQUESTS=false."
            if meta.get("gc_between_requests") is False
            else ""
        ),
        "",
        "| database | memories / users | band: users, memories | searches by | "
        "HTTP search p50 / p95 ms | found of exact top 50 (lowest) |",
        "|---|---|---|---|---|---|",
    ]
    for database, run in results["tenants"].items():
        target = P95_TARGET_MS.get(database)
        for band, search in run["search"].items():
            counts = run["bands"][band]
            found = run["found_of_exact"][band]
            p95_note = ""
            if target is not None:
                p95_note = f" ({_mark(search['p95_ms'] <= target)}: ≤ {target:g})"
            lines.append(
                f"| {database} | {run['memories']:,} / {run['users']:,} | {band}: "
                f"{counts['users']:,}, {counts['memories']:,} | users of "
                f"~{search['memories_of_searchers_mean']:,} memories | {pct(search)}"
                f"{p95_note} | {found['mean']:.3f} ({found['lowest']:.2f}; "
                f"{_mark(found['mean'] >= FOUND_TARGET[band])}) |"
            )
    lines += _warm_up_table(results)
    lines += _again_table(results)
    lines += [
        "",
        "| database | 8 clients: searches/s, p50 / p95 ms | RSS (PSS) per worker | "
        "database size per million memories | load before, after |",
        "|---|---|---|---|---|",
    ]
    for database, run in results["tenants"].items():
        concurrent = run["concurrent"]
        memory = ", ".join(
            f"{w.get('rss_mb', 0):.0f} ({w.get('pss_mb', 0):.0f}) MB" for w in run["workers"]
        )
        lines.append(
            f"| {database} | {concurrent['searches_per_s']:.1f}/s, "
            f"{pct(concurrent['latency'])} | {memory} | "
            f"{run['bytes_per_million_memories'] / 1e9:.2f} GB | "
            f"{run['loadavg_before'][0]:.2f}, {run['loadavg_after'][0]:.2f} |"
        )
    cpu = cpu_table(
        [
            (
                database,
                f"{run['concurrent']['clients']} clients searching",
                "search",
                run["concurrent"].get("cpu"),
            )
            for database, run in results["tenants"].items()
        ]
    )
    if cpu:
        lines += ["", *cpu]
    for database, run in results["tenants"].items():
        lines += _band_breakdown(database, run)
    why = why_missed(results)
    if why:
        lines += ["", "Why the missed bands are missed, from the figures above:", "", *why]
    sweeps = [(db, run["heavy_ef_search_sweep"]) for db, run in results["tenants"].items()]
    for database, sweep in sweeps:
        if not sweep:
            continue
        lines += [
            "",
            f"{database}, heavy users: hnsw.ef_search against the share of the exact nearest "
            "found and the bare KNN time",
            "",
            "| ef_search | found (lowest) | KNN p50 / p95 ms |",
            "|---|---|---|",
        ]
        for row in sweep:
            lines.append(
                f"| {row['ef_search']} | {row['found']:.3f} ({row['lowest']:.2f}) | "
                f"{row['knn_p50_ms']:.1f} / {row['knn_p95_ms']:.1f} |"
            )
    return "\n".join(lines)


def _runs_with(results: dict, part: str) -> list[tuple[str, dict]]:
    """(database, run) of the runs whose every band has `part` (older runs lack newer parts)."""
    return [
        (database, run)
        for database, run in results["tenants"].items()
        if all(part in search for search in run["search"].values())
    ]


def _warm_up_table(results: dict) -> list[str]:
    """The untimed searches before each band's timed ones (bench/tenants.py, warm_up_picks):
    the first searches of those users since the server started. Older runs had none."""
    runs = _runs_with(results, "warm_up")
    if not runs:
        return []
    bands = list(runs[0][1]["search"])
    rounds = runs[0][1]["search"][bands[0]]["warm_up"]["rounds"]
    lines = [
        "",
        f"Before a band's timed searches, the same users searched {rounds} times as often with "
        "texts they were not timed with: the first searches of those users since the server "
        "started, with their pages still on disk. The timings above are those that came after "
        "(p50 / p95 ms of the warm-up):",
        "",
        "| database | " + " | ".join(bands) + " |",
        "|---|" + "---|" * len(bands),
    ]
    for database, run in runs:
        cells = [pct(run["search"][band]["warm_up"]) for band in bands]
        lines.append(f"| {database} | " + " | ".join(cells) + " |")
    return lines


def _again_table(results: dict) -> list[str]:
    """Each band's timed searches made once more right after (bench/tenants.py), with the
    blocks the timed ones read from outside PostgreSQL's shared_buffers. Older runs had
    neither."""
    runs = _runs_with(results, "again")
    if not runs:
        return []
    lines = [
        "",
        "The same timed searches made once more right after, and the database blocks each "
        "timed search read from outside PostgreSQL's shared_buffers (from the operating "
        "system's page cache or the disk) and found in them (pg_stat_database, per search):",
        "",
        "| database | band | timed p50 / p95 ms | again p50 / p95 ms | blocks read, hit |",
        "|---|---|---|---|---|",
    ]
    for database, run in runs:
        for band, search in run["search"].items():
            counts = search.get("blocks_per_search")
            blocks = f"{counts['read']:g}, {counts['hit']:g}" if counts else "–"
            lines.append(
                f"| {database} | {band} | {pct(search)} | {pct(search['again'])} | {blocks} |"
            )
    return lines


def _band_breakdown(database: str, run: dict) -> list[str]:
    """Where the time of one search goes per band (each answer's Server-Timing stages)."""
    bands = [band for band, search in run["search"].items() if search.get("breakdown")]
    if not bands:
        return []
    lines = [
        "",
        f"{database}: where a search's time goes per band (Server-Timing; mean / p95 ms)",
        "",
        "| stage | " + " | ".join(bands) + " |",
        "|---|" + "---|" * len(bands),
    ]
    rows = {band: {r["stage"]: r for r in run["search"][band]["breakdown"]} for band in bands}
    for stage, what in (*SEARCH_STAGES, *((name, name) for name in OUTSIDE_STAGES)):
        if stage in OPTIONAL_STAGES and not any(
            rows[band].get(stage, {}).get("mean_ms") for band in bands
        ):
            continue
        cells = []
        for band in bands:
            row = rows[band].get(stage)
            cells.append(f"{row['mean_ms']:.1f} / {row['p95_ms']:.1f}" if row else "–")
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    means = [f"{run['search'][band]['mean_ms']:.1f}" for band in bands]
    lines.append("| HTTP search, mean | " + " | ".join(means) + " |")
    return lines


def why_missed(results: dict) -> list[str]:
    """A line per band whose p95 missed its target: what of its mean grows with the user's
    memories and what does not, and (runs that have them) the same searches made again
    right after and the blocks they read from outside shared_buffers."""
    lines = []
    for database, run in results["tenants"].items():
        target = P95_TARGET_MS.get(database)
        if target is None:
            continue
        for band, search in run["search"].items():
            if search["p95_ms"] <= target or not search.get("breakdown"):
                continue
            data, rows = data_stages(search["breakdown"])
            parts = "; ".join(
                f"{row['what']} {row['mean_ms']:.1f} / {row['p95_ms']:.1f}" for row in rows
            )
            line = (
                f"- {database}, {band} users: p95 {search['p95_ms']:.1f} ms (target "
                f"{target:.0f}). Of the mean {search['mean_ms']:.1f} ms, "
                f"{search['mean_ms'] - data:.1f} ms are stages that cost the same whatever the "
                f"user holds; the stages that read the user's memories (mean / p95 ms): {parts}."
            )
            again, blocks = search.get("again"), search.get("blocks_per_search")
            if again:
                line += (
                    f" The same searches made again right after: p95 {again['p95_ms']:.1f} ms"
                    + (
                        f"; each timed search had read {blocks['read']:g} blocks from outside "
                        f"shared_buffers (and found {blocks['hit']:g} in them), which the "
                        "second pass found there"
                        if blocks
                        else ""
                    )
                    + "."
                )
            lines.append(line)
    return lines


def tenants_section(name: str, data: dict) -> list[str]:
    """`python -m bench served --tenants`: many end users of one product."""
    return [
        "## Many users (gunicorn, `bench served --tenants`)",
        "",
        *meta_lines(name, data),
        "",
        markdown(data),
        "",
        "PostgreSQL's `shared_buffers` is recorded with each run's database (6 GB, a quarter "
        "of the machine's memory, from this run on; 128 MB before). Runs kept beside this "
        "one: bench/results/tenants-71f14ef.json (the first synthetic memories), and in "
        "bench/results/repeats/ the same databases timed again, and once without warm-up.",
        "",
    ]
