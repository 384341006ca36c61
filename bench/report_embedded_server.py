"""docs/benchmarks.md's section of bench/embedded_server.py's results (kept apart from the
bench, which imports bench.report to write the docs)."""


def markdown(results: dict) -> list[str]:
    lines = [
        "| server | first request, new connection | reused: /healthz | reused: memory | "
        "reused: search |",
        "|---|---|---|---|---|",
    ]
    for target, result in results["embedded_server"].items():
        if "error" in result:
            lines.append(f"| {target} | {result['error'][:200]} | | | |")
            continue
        reused = result["reused_connection"]
        cells = [result["first_request_new_connection"]] + [
            reused[name] for name in ("healthz", "memory", "search")
        ]
        row = " | ".join(f"{c['p50_ms']:.1f} / {c['p95_ms']:.1f}" for c in cells)
        lines.append(f"| {target}: {result['serves']} | {row} |")
    comparison = results.get("reused_gap_ms")
    if comparison is not None:
        lines += [
            "",
            "Embedded default minus production set, reused connection, p50 ms: "
            + ", ".join(f"{name} {gap:+.2f}" for name, gap in comparison.items())
            + f" (target: within {results['meta']['target_ms']} ms).",
        ]
    return lines


def embedded_server_section(name: str, data: dict) -> list[str]:
    """docs/benchmarks.md's section (bench/report.py)."""
    meta = data["meta"]
    m = meta["machine"]
    return [
        "## The embedded default's server against the production set (`bench.embedded_server`)",
        "",
        f"- results file: `bench/results/{name}`; command: `.venv/bin/{meta['command']}`",
        f"- date (UTC): {meta['date']}; code: {meta['git']}; whole run: {meta['seconds']:.0f} s",
        f"- machine: nproc {m['nproc']}, {m.get('cpu', '?')}, {m.get('memory_gib', '?')} GiB, "
        f"Python {m['python']}, {m['platform']}",
        f"- p50 / p95 ms from a client process over 127.0.0.1; {meta['memories']} memories of "
        f"one user; {meta['connections']} new connections, then {meta['requests']} rounds on "
        "one kept-alive connection",
        "",
        *markdown(data),
        "",
    ]
