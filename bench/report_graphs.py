"""docs/benchmarks.md: the section of `python -m bench graphs` (bench/graphs.py)."""

from bench.report_cells import meta_lines


def graphs_section(name: str, data: dict) -> list[str]:
    from memories.recall.vector_store.partition_indexes import GRAPH_EF_CONSTRUCTION, GRAPH_M

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
        f"- the service builds m {GRAPH_M}, ef_construction {GRAPH_EF_CONSTRUCTION} "
        "(memories/recall/vector_store/partition_indexes.py)",
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
