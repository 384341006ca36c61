"""docs/benchmarks.md: the section of `python -m bench graphs` (bench/graphs.py)."""

from bench.report_cells import meta_lines


def graphs_section(name: str, data: dict) -> list[str]:
    result = data["graphs"]["postgresql"]
    ef_searches = [search["ef_search"] for search in result["builds"][0]["searches"]]
    without = result["write_without_graph"]
    out = [
        "## A heavy user's HNSW graph: its build against search and writes (`bench graphs`)",
        "",
        *meta_lines(name, data),
        f"- one user's partition of {result['memories']:,} synthetic memories, "
        f"{result['queries']} queries; found: the share of the exact nearest {result['k']} "
        "that the vector store's search returns (mean, and the lowest single search)",
        f"- a write: {result['write_batch']} memories with their vectors and keyword postings "
        f"in one transaction, p50 over {without['n']}; with no graph "
        f"{without['p50_ms']:.0f} ms",
        *_service_build_line(result),
        "",
        "| m | ef_construction | build, s | graph, MB | write of "
        f"{result['write_batch']}, ms p50 | "
        + " | ".join(
            f"ef_search {ef}: found (lowest) | ef_search {ef}: KNN p50 / p95 ms"
            for ef in ef_searches
        )
        + " |",
        "|---|---|---|---|---|" + "---|---|" * len(ef_searches),
    ]
    for build in result["builds"]:
        cells = [
            str(build["m"]),
            str(build["ef_construction"]),
            f"{build['build_seconds']:.0f}",
            f"{build['graph_mb']:.0f}",
            f"{build['write']['p50_ms']:.0f}",
        ]
        for search in build["searches"]:
            cells += [
                f"{search['found']:.3f} ({search['lowest']:.2f})",
                f"{search['knn_p50_ms']:.1f} / {search['knn_p95_ms']:.1f}",
            ]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def _service_build_line(result: dict) -> list[str]:
    # From the results, not the code: the report runs outside Django, and later code may
    # build otherwise.
    build = result.get("service_build")
    if not build:
        return []
    return [
        f"- the service's build at that commit: m {build['m']}, ef_construction "
        f"{build['ef_construction']}, searched at ef_search {build['ef_search']} "
        "(memories/recall/vector_store/partition_indexes.py, RECALL_HNSW_EF_SEARCH)"
    ]
