"""docs/benchmarks.md's section of bench/fair_writes.py's results, and the run's constants
it names (kept apart from the bench, which imports bench.report to write the docs)."""

SAVERS = 10
SAVE_INTERVAL = 0.1
TARGET_P95_MS = 500


def table(results: dict) -> list[str]:
    """The saves of each phase, one row per database."""
    lines = [
        "| database | phase | phase s | saves | p50 / p95 / max ms | over 1 s | not 2xx | "
        f"p95 < {TARGET_P95_MS} ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for database, result in results["fair_writes"].items():
        for phase in ("quiet", "import", "erasure"):
            saves = result["saves"][phase]
            seconds = result[phase]["seconds"] if phase in result else ""
            if not saves.get("n"):
                lines.append(f"| {database} | {phase} | {seconds} | 0 | – | – | – | – |")
                continue
            met = "met" if saves["p95_ms"] < TARGET_P95_MS else "**missed**"
            met = "" if phase == "quiet" else met
            lines.append(
                f"| {database} | {phase} | {seconds} | {saves['n']} | {saves['p50_ms']:.0f} / "
                f"{saves['p95_ms']:.0f} / {saves['max_ms']:.0f} | {saves['over_1s']} | "
                f"{saves['not_2xx']} | {met} |"
            )
    return lines


def fair_writes_section(found: list) -> list[str]:
    """docs/benchmarks.md: every fair-writes run, newest first."""
    runs = sorted(
        ((name, data) for name, data in found if "fair_writes" in data),
        key=lambda item: item[1]["meta"]["date"],
        reverse=True,
    )
    if not runs:
        return []
    from bench.report_cells import meta_lines

    out = [
        "## Other users' saves during a large import and an erasure (SQLite)",
        "",
        "`python -m bench fair_writes` (bench/fair_writes.py): gunicorn with "
        "config/gunicorn.conf.py (one worker, its threads), DEBUG off, on SQLite; a client "
        f"process saves (POST /api/memories as one of {SAVERS} end users in turn, one every "
        f"{SAVE_INTERVAL} s) while nothing else runs, then during a POST /api/memories/import "
        "of the run's lines, then during the erasure of the user holding them "
        "(DELETE /api/users/{id}). A save counts in a phase when it ran while the phase did.",
        "",
    ]
    for name, data in runs:
        result = next(iter(data["fair_writes"].values()))
        imported, erased = result["import"], result["erasure"]
        out += [
            *meta_lines(name, data),
            f"- import: {imported['created']} created in {imported['seconds']} s; erasure of "
            f"{erased['memories']} memories in {erased['seconds']} s",
            "",
            *table(data),
            "",
        ]
    return out
