"""What the sections of docs/benchmarks.md (bench/report.py) share: the cells of their tables,
which results file is the newest with a part, and a section's run details."""


def cell(block: dict | None) -> str:
    if not block or block.get("recall@10") is None:
        return "–"
    return f"{block['recall@5']:.3f} / {block['recall@10']:.3f}"


def pct(d: dict) -> str:
    return f"{d['p50_ms']:.1f} / {d['p95_ms']:.1f}"


def newest_result(found: list, part: str):
    """The newest run of a part, among the parts' own runs (not an issue's, in its folder)."""
    best = None
    for name, data in found:
        if data.get("issue_run"):
            continue
        if part in data and (best is None or data["meta"]["date"] >= best[1]["meta"]["date"]):
            best = (name, data)
    return best


def meta_lines(name: str, data: dict) -> list[str]:
    meta = data["meta"]
    m = meta["machine"]
    return [
        f"- results file: `bench/results/{name}`; command: `.venv/bin/{meta['command']}`",
        f"- date (UTC): {meta['date']}; code: {meta['git']}; whole run: {meta['seconds']:.0f} s",
        f"- machine: nproc {m['nproc']}, {m.get('cpu', '?')}, {m.get('memory_gib', '?')} GiB, "
        f"Python {m['python']}, {m['platform']}",
        *_synthetic_noise_line(data),
    ]


def _synthetic_noise_line(data: dict) -> list[str]:
    """Which synthetic memories a run timed (bench/synthetic_noise.py), for the runs that use
    them; results from before the calibration had the fixed noise 0.6."""
    meta = data["meta"]
    if "synthetic_noise" in meta:
        noise = meta["synthetic_noise"]
        if noise is None:
            return ["- synthetic memories' noise: not calibrated for this embedder"]
        return [
            f"- synthetic memories' noise: {noise['noise']} (LID {noise['lid_synthetic']}; "
            f"LOCOMO turns {noise['lid_locomo_turns']}, bench/synthetic_noise.py)"
        ]
    if any(part in data for part in ("served", "latency", "tenants")):
        return ["- synthetic memories' noise: 0.6, fixed (before the calibration; LID ~95)"]
    return []


def section_start(title: str, name: str, data: dict, part: str) -> tuple[list, list, dict]:
    """A section's heading and run details, its databases and the first database's block."""
    databases = list(data[part])
    return ["## " + title, "", *meta_lines(name, data)], databases, data[part][databases[0]]
