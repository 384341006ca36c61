"""The sections of docs/benchmarks.md on recall quality: LOCOMO dev per method, the weight
sweep and the settings tried with one conversation left out (bench/tune.py)."""

from bench.locomo import CATEGORIES
from bench.report_cells import cell, section_start

METHODS = {
    "service": "service: memory_recall, default Weights, access counting on",
    "bm25": "BM25 (bm25s) over the turn texts",
    "dense": "dense cosine, MiniLM, numpy over the turn texts",
    "dense_store": "dense via the vector store (service's vectors of `key: value`)",
    "rrf": "reference: reciprocal-rank fusion of BM25 + dense (k=60)",
    "service_no_access": "diagnostic: service with access counting off",
}


def newest_sweeps(found: list) -> list:
    """(source, database, sweep) of the newest results that hold a sweep."""
    candidates = []
    for name, data in found:
        for part in ("quality", "sweep"):
            for database, result in data.get(part, {}).items():
                if result.get("sweep"):
                    candidates.append((data["meta"]["date"], name, database, result, data))
    if not candidates:
        return []
    newest = max(c[0] for c in candidates)
    return [c[1:] for c in candidates if c[0] == newest]


def quality_section(name: str, data: dict) -> list[str]:
    out, databases, first = section_start("Recall quality on LOCOMO dev", name, data, "quality")
    out += [
        f"- {first['queries']} queries (categories 1-4 with evidence) over {first['memories']} "
        f"turns of {len(first['conversations'])} conversations; one fresh user per "
        "conversation; memory key = dia_id, value = `[session date] speaker: text`; queries "
        "in dataset order with access counting on (each recall adds to the access counts "
        "that later recalls score by), top_k = 10",
        "- cells are recall@5 / recall@10 (share of a question's evidence turns in the top k, "
        "averaged over questions)",
        "- BM25, dense and RRF run outside the database (bm25s, numpy), so they are the same "
        "in both columns; the service ranks keywords the same way on both (BM25 over its own "
        "postings), so it differs by database only where HNSW (PostgreSQL) and the exact "
        "search (SQLite) find different neighbours",
        f"- embedder: {data['meta'].get('embedder', 'all-MiniLM-L6-v2')}; the results with "
        "the float model (all-MiniLM-L6-v2, before int8 became the default) are kept in "
        "`bench/results/quality-9b6ee7a-float.json`: service 0.610 / 0.679 on both databases",
        "",
    ]
    header = "| method | " + " | ".join(databases) + " |"
    out += [header, "|---|" + "---|" * len(databases)]
    for method, label in METHODS.items():
        if method in first.get("methods", {}):
            cells = [cell(data["quality"][d]["methods"][method]["overall"]) for d in databases]
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    out.append("")
    for database in databases:
        result = data["quality"][database]
        target = result.get("target")
        if target:
            verdict = "met" if target["met"] else "MISSED"
            out.append(
                f"- {database}: service recall@10 {target['service_recall@10']:.3f} vs best "
                f"baseline {target['best_baseline_recall@10']:.3f}: "
                f"{target['margin_points']:+.1f} points (target +3.0: {verdict}); "
                f"{result['methods']['service'].get('fewer_than_top_k', 0)} queries returned "
                "fewer than 10 memories (relevance floor)"
            )
    out.append("")
    for database in databases:
        result = data["quality"][database]
        cats = [c for c in CATEGORIES.values() if c in result["methods"]["service"]["by_category"]]
        ns = result["methods"]["service"]["by_category"]
        out += [
            f"By category on {database} (recall@5 / recall@10):",
            "",
            "| method | " + " | ".join(f"{c} (n={ns[c]['n']})" for c in cats) + " |",
            "|---|" + "---|" * len(cats),
        ]
        for method, label in METHODS.items():
            if method in result["methods"]:
                by = result["methods"][method]["by_category"]
                out.append(f"| {label} | " + " | ".join(cell(by.get(c)) for c in cats) + " |")
        out.append("")
    out += ["Ingestion (batch embedding + one memory_create per memory, vector passed in):", ""]
    out += ["| database | memories | embed s/1000 | write s/1000 | total s/1000 |"]
    out += ["|---|---|---|---|---|"]
    for database in databases:
        i = data["quality"][database]["ingest"]
        out.append(
            f"| {database} | {i['memories']} | {i['embed_s_per_1000']} | "
            f"{i['write_s_per_1000']} | {i['total_s_per_1000']} |"
        )
    out.append("")
    out.append(
        "Run time per database (s): "
        + ", ".join(
            f"{d} {data['quality'][d]['wall_seconds']:.0f} (load average before/after "
            f"{data['quality'][d]['loadavg_before'][0]}/{data['quality'][d]['loadavg_after'][0]})"
            for d in databases
        )
    )
    w = first["weights"]
    out += [
        "",
        f"Default Weights used: relevance {w['relevance']}, importance {w['importance']}, "
        f"recency {w['recency']}, frequency {w['frequency']}, vector_share {w['vector_share']}, "
        + (
            f"similarity_floor {w['similarity_floor']}, near_best_floor {w['near_best_floor']} "
            f"within {w['near_best_band']} of the best, keyword_floor {w['keyword_floor']}, "
            if "similarity_floor" in w
            else f"relevance_floor {w.get('relevance_floor')}, "
        )
        + f"half-life {w['half_life_days']} days.",
        "",
    ]
    return out


def sweep_section(sweeps: list) -> list[str]:
    out = ["## Weight sweep (access counting on, vectors precomputed)", ""]
    for name, database, result, _data in sweeps:
        rows = result["sweep"]["rows"]
        best = result["sweep"]["best"]
        out += [
            f"{database} ({name}); cells recall@5 / recall@10; best: vector_share "
            f"{best['vector_share']}, similarity floor {best.get('similarity_floor')}, candidates "
            f"{best['candidates']} -> {cell(best['overall'])}",
            "",
            "| candidates | vector_share | similarity floor 0.15 | 0.2 | 0.25 |",
            "|---|---|---|---|---|",
        ]
        cells: dict = {}
        for row in rows:
            cells[(row["candidates"], row["vector_share"], row.get("similarity_floor"))] = row
        for candidates in sorted({r["candidates"] for r in rows}):
            for share in sorted({r["vector_share"] for r in rows}):
                line = [
                    cell(cells.get((candidates, share, f), {}).get("overall"))
                    for f in (0.15, 0.2, 0.25)
                ]
                out.append(f"| {candidates} | {share} | " + " | ".join(line) + " |")
        out.append("")
    return out


def tune_section(found: list) -> list[str]:
    """Every results file with a tune part (the newest per code version), as tables: all-in
    recall of each setting tried per database and memory text, then the five folds."""
    runs = [(name, data) for name, data in found if "tune" in data]
    if not runs:
        return []
    out = [
        "## Settings tried, and chosen with one conversation left out",
        "",
        "`python -m bench tune --data ...` (bench/tune.py): LOCOMO dev through memory_recall, "
        "access counting on (reset before each setting), for the memory text with its session "
        "date (`dated`: `[date] speaker: text`, as above) and without (`undated`: `speaker: "
        "text`). Cells are recall@5 / recall@10. Five folds: for each conversation, the "
        "setting with the best recall@10 on the other four is chosen and measured on it.",
        "",
    ]
    for name, data in sorted(runs, key=lambda run: run[1]["meta"]["date"]):
        meta = data["meta"]
        out += [f"### {name}: code {meta['git']}, {meta['date']}", ""]
        if meta.get("note"):
            out += [meta["note"][0].upper() + meta["note"][1:] + ".", ""]
        databases = list(data["tune"])
        variants = list(next(iter(data["tune"].values()))["variants"])
        columns = [(d, v) for d in databases for v in variants]
        out += [
            "| setting | " + " | ".join(f"{d} {v}" for d, v in columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        names = list(data["tune"][databases[0]]["variants"][variants[0]]["configs"])
        for config in names:
            cells = [
                cell(data["tune"][d]["variants"][v]["configs"].get(config)) for d, v in columns
            ]
            out.append(f"| {config} | " + " | ".join(cells) + " |")
        out += ["", "Multi-hop questions (recall@5 / recall@10):", ""]
        out += [
            "| setting | " + " | ".join(f"{d} {v}" for d, v in columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        for config in names:
            cells = []
            for d, v in columns:
                block = data["tune"][d]["variants"][v]["configs"].get(config, {})
                pair = block.get("by_category", {}).get("multi-hop")
                cells.append(f"{pair[0]:.3f} / {pair[1]:.3f}" if pair else "–")
            out.append(f"| {config} | " + " | ".join(cells) + " |")
        out += [
            "",
            "Five folds (the setting chosen on four conversations, measured on the fifth):",
            "",
        ]
        for d, v in columns:
            folds = data["tune"][d]["variants"][v]["five_fold"]
            default = data["tune"][d]["variants"][v]["configs"].get("default")
            out += [
                f"{d}, {v}: pooled over the left-out conversations "
                f"{cell(folds['pooled'])}; all-in with the default settings {cell(default)}",
                "",
                "| left out | questions | chosen | recall@5 / recall@10 on it |",
                "|---|---|---|---|",
            ]
            for fold in folds["folds"]:
                out.append(
                    f"| {fold['left_out']} | {fold['questions']} | {fold['chosen']} "
                    f"| {cell(fold)} |"
                )
            out.append("")
    return out
