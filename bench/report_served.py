"""The sections of docs/benchmarks.md on the service served over HTTP (bench/served.py): the
newest run's tables and the headline figures across commits."""

from bench.report_cells import meta_lines, pct
from bench.served_tables import markdown as served_tables


def served_section(name: str, data: dict) -> list[str]:
    """`python -m bench served`: the service under gunicorn, timed over HTTP."""
    return [
        "## Served over HTTP (gunicorn)",
        "",
        *meta_lines(name, data),
        "",
        served_tables(data),
        "",
        "Measured on the way (100,000 vectors of 384 floats, one partition; the AMD EPYC "
        "machines of the earlier sessions unless said):",
        "",
        "- sqlite-vec's exact scan took ~57 ms (float, cosine or L2), ~85 ms with an int8 "
        "column and ~22 ms with a bit column (which kept only 0.89 of the exact top 50 at 16x "
        "oversampling in an earlier session); numpy's product over the same float vectors "
        "~6 ms on two BLAS threads, ~12 ms on one. Hence the in-process mirror, exact below "
        "20,000 vectors; from there its 8-bit copy (int8, centred and scaled per dimension, "
        "ONNX Runtime's MatMulInteger) picks 1,000 candidates in a quarter of the bytes, "
        "scored exactly after (~8 ms against ~27 for the float product at 100,000 with the "
        "machine loaded). On this session's Intel Xeon (AMX) the same 8-bit product took "
        "11.8 ms, as long as the float one (11 ms on one thread): ONNX Runtime packs the right "
        "operand on every call, and the rows were on the right. With the rows on the left "
        "(unsigned, value + 128) and the query on the right, 2.4 ms (code 2001528).",
        "- PostgreSQL's `shared_buffers`: the benchmark's server gets a quarter of the "
        "machine's memory (bench/pg.py; the results file records it), as docs/operations.md "
        "advises. At initdb's 128 MB neither the graph nor the vectors of 100,000 memories "
        "fit, and this machine's memory reclaim keeps the page cache small: PostgreSQL "
        "20.7 / 29.5 ms p50/p95 and 82 searches/s with 8 clients "
        "(bench/results/served-pg-baseline.json) against 17.8 / 23.4 ms and 106/s at 6 GB "
        "(served-pg-sb.json), the same code.",
        "- The query embedded on another thread beside the keyword search (PostgreSQL, "
        "through gunicorn, two runs each way): the keyword search slowed from 0.65 to 3.8 ms "
        "p50 as much as the overlap saved, HTTP p50 20.6-21.4 vs 20.2-21.9 ms; not kept.",
        "- Python's garbage collector between requests (GC_BETWEEN_REQUESTS, on by default) "
        "against Python's own schedule (off), PostgreSQL, through gunicorn, two runs each way "
        "on this session's Intel Xeon (code db92aee): HTTP p50 / p95 21.0 / 27.1 and "
        "20.4 / 26.9 ms on, 19.6 / 26.0 and 21.2 / 27.6 ms off; 8 clients 89.4 and 92.7/s on, "
        "93.9 and 86.8/s off (bench/results/served-db92aee.json and "
        "repeats/served-db92aee-gc-*.json). No difference beyond the spread between runs: "
        "the pauses it moves out of requests (in process: a young collection in most "
        "searches, ~0.5 ms, a middle one in 1 of 15, 3.5-5 ms) are smaller than what "
        "varies between runs here.",
        "- The query embedding of the benchmark's queries (~12 tokens) in a loop in one "
        "process on this session's Intel Xeon, idle (code 5f5f804): 3.6 ms p50 back to "
        "back; 4.3, 5.0 and 5.9 ms with 1, 5 and 20 ms asleep before each, and 5.9 ms after "
        "20 ms of pure-Python work instead. The model's ~21 MB of int8 weights do not stay "
        "in the processor's caches while anything else runs for a few milliseconds, which "
        "is how a served search meets them (one embedding per request): hence the served "
        "embedding stage at ~5 ms where a loop says 3.6.",
        "- int8 weights, per-channel dynamic quantisation of the weight matrices: 2.5 times "
        "the float model's throughput on one thread; in a shared batch a text's vector moved "
        "with its neighbours (cosine down to 0.988, activations are scaled per call), so each "
        "text is embedded alone, several at once on threads: 100 texts in 0.16 s on two "
        "cores (0.92 s before, float, batched, one thread).",
        "- PostgreSQL searches the user's partition through its own HNSW graph (built by the "
        "periodic task from 10,000 memories, m 32, ef_construction 200, ef_search 40): the "
        "table above says what share of the exact nearest it finds. With pgvector's defaults "
        "(m 16, ef_construction 64) one graph of the MiniLM vectors of the uncalibrated "
        "corpus (noise 0.6) found 0.93 at ef_search 40, 0.945 at 100 and 0.965 at 150 (KNN "
        "p50 4.7 and 6.6 ms) in an earlier session; e5's vectors of that corpus, 0.58 with a "
        "graph of the user's own at m 32 (the synthetic memories' noise is now calibrated to "
        'real text: bench/README.md, "Synthetic noise").',
        "",
    ]


def served_history_section(found: list) -> list[str]:
    """Every full `bench served` result kept, oldest first: the headline figures by commit."""
    runs = sorted(
        (data["meta"]["date"], name, data)
        for name, data in found
        if "served" in data and not data["meta"].get("quick") and not data.get("issue_run")
    )
    if len(runs) < 2:
        return []
    out = [
        "### Served over HTTP across commits",
        "",
        "The sessions' machines differ in their processors (the CPU column): compare runs "
        "on the same one.",
        "",
        "| code | date | CPU | database | HTTP search p50 / p95 ms | 8 clients, searches/s | "
        "batch ingest, memories/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for date, name, data in runs:
        cpu = data["meta"].get("machine", {}).get("cpu", "–")
        for database, run in data["served"].items():
            out.append(
                f"| {data['meta']['git']} (`{name}`) | {date[:16]} | {cpu} | {database} | "
                f"{pct(run['search']['http'])} | {run['concurrent']['searches_per_s']:.1f} | "
                f"{run['batch']['memories_per_s']:.0f} |"
            )
    return [*out, ""]


def newest_filtered(found: list):
    """The newest served run that timed a filtered search (issue 46), wherever it is kept."""
    runs = [
        (name, data)
        for name, data in found
        if any("search_filtered" in run for run in data.get("served", {}).values())
    ]
    return max(runs, key=lambda run: run[1]["meta"]["date"], default=None)


def filtered_search_section(name: str, data: dict) -> list[str]:
    """A search filtered to 1% of the memories beside the same searches unfiltered, from
    one served run (bench/served.py)."""
    table = served_tables(data).split("\n")
    start = next(i for i, line in enumerate(table) if line.startswith("Search with a filter"))
    end = next(i for i in range(start + 4, len(table)) if not table[i].startswith("|"))
    return [
        "## Filtered search (gunicorn)",
        "",
        *meta_lines(name, data),
        "",
        *table[start:end],
        "",
    ]
