"""The comparison table of `python -m bench embedders`: what embedders.py prints and what
report.py puts in docs/benchmarks.md."""


def table(results: dict) -> str:
    rows = results["embedders"]
    out = [
        "| model | LOCOMO recall@10 (service, SQLite / PostgreSQL) | dense recall@10 "
        "| unrelated: nothing (report) | vague / paraphrase / other-language kept (report) "
        "| cross-language @1 | query embedding p50 (served) | batch ingest SQLite "
        "| worker PSS | package + ONNX |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.values():
        quality = row.get("quality", {})
        recall = " / ".join(f"{v['service_recall@10']:.3f}" for v in quality.values()) or "–"
        dense = " / ".join(f"{v['dense_recall@10']:.3f}" for v in quality.values()) or "–"
        vague = row.get("vague", {}).get("sqlite", {})

        def share(key, vague=vague):
            value = vague.get(key)
            return "–" if value is None else f"{value:.0%}"

        kept = " / ".join(
            share(f"report.{kind}.relevant_kept_share")
            for kind in ("vague", "paraphrase", "other_language")
        )
        served = row.get("served", {})
        install = row["install"]
        out.append(
            f"| {row['model']} | {recall} | {dense} "
            f"| {share('report.unrelated.nothing_returned_share')} | {kept} "
            f"| {row['cross_language']['mean']:.2f} "
            f"| {served.get('query_embedding_p50_ms', '–')} ms "
            f"| {served.get('batch_memories_per_s', '–')} memories/s "
            f"| {served.get('worker_pss_mb', '–')} MB "
            f"| {install['package_mb']} + {install['onnx_int8_mb']} MB |"
        )
    return "\n".join(out)
