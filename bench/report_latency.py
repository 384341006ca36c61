"""The sections of docs/benchmarks.md on in-process search latency (bench/latency.py): one
run's tables, quality at scale, and the same benchmark across commits."""

from bench.report_cells import pct, section_start

MODES = (
    ("knn", "(iii) bare KNN"),
    ("recall", "(i) recall, vector given"),
    ("recall_embed", "(ii) recall + embedding"),
    ("embed", "embedding alone"),
    ("http", "GET /api/memories/search"),
)
PROBES = {
    "keyword_search": "keyword search alone (the service's)",
    "keyword_unbounded": "PG: keyword search without the row budget (every match ranked)",
    "candidates_one_statement": "PG: candidate step in one statement (the service's)",
    "candidates_step_by_step": "PG: candidate step as separate queries",
}
STEPS = ("candidates", "scoring+rest", "access_update")


def latency_section(name: str, data: dict) -> list[str]:
    out, databases, first = section_start("Search latency, one user", name, data, "latency")
    out += [
        f"- {first['queries']} synthetic queries per size (after 10 untimed warm-up calls per "
        f"mode), in process, access counting on; KNN k = {first['candidates_k']} "
        "(RECALL_CANDIDATES), recall top_k = 10, keyword row budget "
        f"{first.get('keyword_row_budget')}",
        "- modes interleaved: round j runs mode i on query (j + i·n/modes) mod n, so machine "
        "speed changes hit every mode alike and no mode reuses a query another mode just ran",
        "- synthetic memories (see below), bulk-inserted; cells are p50 / p95 in ms",
        "- timings need an idle machine (2 cores); the load averages before and after each "
        "database are below",
        "",
        "| database | memories | "
        + " | ".join(label for _, label in MODES)
        + " | (i)/(iii) p95 | ≤ 2? |",
        "|---|---|" + "---|" * len(MODES) + "---|---|",
    ]
    for database in databases:
        for size in data["latency"][database]["sizes"]:
            modes = size["modes"]
            ratio = size["ratio_recall_to_knn_p95"]
            out.append(
                f"| {database} | {size['memories']:,} | "
                + " | ".join(pct(modes[m]) for m, _ in MODES)
                + f" | {ratio:.2f} | {'yes' if ratio <= 2 else 'no'} |"
            )
    out += [
        "",
        "Where the time of (i) goes (each step timed where memory_recall calls it; "
        "mean ms, and its share of the mean total). `candidates` is the nearest neighbours, "
        "the keyword hits and their scoring fields (one statement on PostgreSQL); "
        "`access_update` is the UPDATE ... RETURNING that counts the access and reads the "
        "top_k rows:",
        "",
        "| database | memories | total | " + " | ".join(STEPS) + " |",
        "|---|---|---|" + "---|" * len(STEPS),
    ]
    for database in databases:
        for size in data["latency"][database]["sizes"]:
            b = size["breakdown"]
            total = b["total"]["mean_ms"]
            cells = []
            for step in STEPS:
                mean = b["steps"].get(step, {}).get("mean_ms", 0.0)
                cells.append(f"{mean:.1f} ({mean / total:.0%})")
            out.append(
                f"| {database} | {size['memories']:,} | {total:.1f} | " + " | ".join(cells) + " |"
            )
    out += [
        "",
        "Parts alone and their alternatives, on the same data and queries (bench/latency.py "
        "`_probes`, interleaved), p50 / p95 ms:",
        "",
    ]
    columns = [
        (database, size) for database in databases for size in data["latency"][database]["sizes"]
    ]
    out += [
        "| probe | " + " | ".join(f"{d} {size['memories']:,}" for d, size in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for probe, label in PROBES.items():
        cells = [
            pct(size["probes"][probe]) if probe in size.get("probes", {}) else "–"
            for _, size in columns
        ]
        if any(c != "–" for c in cells):
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    out += scale_quality_lines(data["latency"])
    out += [
        "",
        "HTTP overhead (GET /api/memories/search p50 minus (ii) p50): "
        + ", ".join(
            f"{d} {size['memories']:,}: "
            f"{size['modes']['http']['p50_ms'] - size['modes']['recall_embed']['p50_ms']:.1f} ms"
            for d in databases
            for size in data["latency"][d]["sizes"]
        )
        + ". cProfile listings (recall by own time, HTTP by cumulative time) are in the "
        "results JSON under `profile`.",
    ]
    out += ["", "Loading and run times:", ""]
    out += ["| database | memories | rows inserted | insert s | index build s | queries s |"]
    out += ["|---|---|---|---|---|---|"]
    for database in databases:
        for size in data["latency"][database]["sizes"]:
            load = size["load"]
            out.append(
                f"| {database} | {size['memories']:,} | {load['rows']:,} | "
                f"{load['rows_seconds']} | {load['index_seconds']} | {size['query_seconds']} |"
            )
    out.append("")
    out.append(
        "Run time per database (s): "
        + ", ".join(
            f"{d} {data['latency'][d]['wall_seconds']:.0f} (load average before/after "
            f"{data['latency'][d]['loadavg_before'][0]}/{data['latency'][d]['loadavg_after'][0]})"
            for d in databases
        )
    )
    for database in databases:
        for size in data["latency"][database]["sizes"]:
            plans = size.get("plans", {})
            line = (
                f"- {database} {size['memories']:,}: sample query {plans.get('sample_query')!r} "
                f"-> keyword terms {plans.get('keyword_terms')}, matching "
                f"{plans.get('keyword_matches')} rows"
            )
            if plans.get("nearest_plan"):
                line += "; nearest plan: " + " / ".join(
                    p.strip() for p in plans["nearest_plan"][:4]
                )
            out.append(line)
    out += [
        "",
        "Synthetic data: LOCOMO-like turns `[date] speaker: sentence` from a fixed vocabulary "
        f"({first['vocabulary_words']} content words, Zipf-distributed choice; 24 speakers), "
        "e.g. " + "; ".join(f"`{m}`" for m in first["sample_memories"][:2]) + ". Queries "
        "are template questions over the same vocabulary, e.g. "
        + "; ".join(f"`{q}`" for q in first["sample_queries"][:2])
        + ". Vectors are not model outputs: each memory's vector is the normalised mean of "
        "the embedder's vectors of its content words plus Gaussian noise (so memories "
        "sharing words cluster and real query embeddings land among them), as much noise as "
        "gives the memories the intrinsic dimensionality of LOCOMO's turns embedded by the "
        "same model (bench/synthetic_noise.py); only the vocabulary and "
        "the queries are embedded. Rows are bulk-inserted (bench/bulk.py): Memory and "
        "MemoryEmbedding rows plus the sqlite-vec and FTS5 rows on SQLite; on PostgreSQL the "
        "vectors by binary COPY with the HNSW index rebuilt after the load, the tsvector "
        "column generated by PostgreSQL. No revision rows.",
        "",
    ]
    return out


def scale_quality_lines(latency: dict) -> list[str]:
    blocks = [
        (database, size)
        for database, result in latency.items()
        for size in result["sizes"]
        if size.get("scale_quality")
    ]
    if not blocks:
        return []
    out = [
        "",
        "Quality at scale: LOCOMO conversations saved among the synthetic memories of the same "
        "user (through memory_create), recall@10 of their questions (categories 1-4 with "
        "evidence), access counting off, for several keyword row budgets "
        "(RECALL_KEYWORD_ROW_BUDGET; 'none' ranks every match). Latency is memory_recall "
        "with the vector given, p50 / p95 ms, not interleaved.",
        "",
        "| database | memories | questions | keyword row budget | recall@10 | latency |",
        "|---|---|---|---|---|---|",
    ]
    for database, size in blocks:
        scale = size["scale_quality"]
        for row in scale["rows"]:
            budget = row["budget"]
            if budget is None:
                label = f"{latency[database].get('keyword_row_budget', '?')} (default)"
            else:
                label = "none" if budget >= 10**9 else f"{budget:,}"
            out.append(
                f"| {database} | {size['memories'] + scale['memories_added']:,} | "
                f"{scale['questions']} | {label} | {row['recall@10']:.3f} | "
                f"{pct(row['latency'])} |"
            )
    return out


def latency_history_section(found: list) -> list[str]:
    """Every full latency result, oldest first: the same benchmark on successive commits, so a
    change's cost shows next to the run before it."""
    runs = sorted(
        ((name, data) for name, data in found if "latency" in data),
        key=lambda run: run[1]["meta"]["date"],
    )
    if len(runs) < 2:
        return []
    out = [
        "## Search latency across commits",
        "",
        "The latency part (in process, 200 queries unless said) of each results file, oldest "
        "first; p50 / p95 ms. Runs minutes apart on the same machine; the keyword search "
        "alone is the `keyword_search` probe.",
        "",
        "| results | code | database | memories | bare KNN | recall, vector given "
        "| keyword search alone | GET /api/memories/search |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, data in runs:
        for database, result in data["latency"].items():
            for size in result["sizes"]:
                keyword = size.get("probes", {}).get("keyword_search")
                out.append(
                    f"| {name} | {data['meta']['git']} | {database} | {size['memories']:,} "
                    f"| {pct(size['modes']['knn'])} | {pct(size['modes']['recall'])} "
                    f"| {pct(keyword) if keyword else '–'} | {pct(size['modes']['http'])} |"
                )
    return out + [""]
