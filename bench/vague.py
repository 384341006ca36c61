"""Vague, broad and paraphrased questions (tests/data/vague_questions.json) against the
service's recall, for each setting of a grid of Weights overrides: the share of relevant
memories cut, the share of unrelated ones let in, and how much comes back for questions no
memory answers. Runs inside a worker whose Django is already set up on a fresh database (see
bench.worker)."""

import json
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "vague_questions.json"
TOP_K = 10

# One setting per entry: overrides of memories.recall.scoring.Weights, applied as
# dataclasses.replace(Weights.from_settings(), **overrides); {} is the current settings.
# Both floors at 0 keep every candidate: the most that can get in.
GRID: list[dict] = [
    {},
    {"similarity_floor": 0.0, "keyword_floor": 0.0},
    # An absolute similarity floor alone (near_best_floor 1 turns the near-best rule off).
    {"similarity_floor": 0.1, "near_best_floor": 1.0},
    {"similarity_floor": 0.12, "near_best_floor": 1.0},
    {"similarity_floor": 0.15, "near_best_floor": 1.0},
    {"similarity_floor": 0.2, "near_best_floor": 1.0},
    {"similarity_floor": 0.25, "near_best_floor": 1.0},
    # Near the query's best similarity.
    {"near_best_floor": 0.06, "near_best_band": 0.1},
    {"near_best_floor": 0.1, "near_best_band": 0.1},
    {"near_best_floor": 0.08, "near_best_band": 0.05},
    {"near_best_floor": 0.08, "near_best_band": 0.15},
    {"similarity_floor": 0.25, "near_best_floor": 0.08, "near_best_band": 0.1},
    {"keyword_floor": 0.2},
    {"keyword_floor": 0.5},
]

KINDS = ("vague", "broad", "paraphrase")


def load(path: Path = DATA) -> list[dict]:
    """The profiles of the data set, checked: every labelled key is one of the profile's
    memories, no key is both relevant and unrelated, and no question has more relevant
    memories than a recall returns (those would count as cut whatever the floor)."""
    profiles = json.loads(Path(path).read_text())
    for profile in profiles:
        keys = [memory["key"] for memory in profile["memories"]]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{profile['name']}: duplicate memory keys")
        for question in profile["questions"]:
            where = f"{profile['name']}: {question['query']!r}"
            relevant, unrelated = set(question["relevant"]), set(question["unrelated"])
            unknown = (relevant | unrelated) - set(keys)
            if unknown:
                raise ValueError(f"{where} names unknown keys {sorted(unknown)}")
            if relevant & unrelated:
                raise ValueError(f"{where}: {sorted(relevant & unrelated)} in both lists")
            if len(relevant) > TOP_K:
                raise ValueError(f"{where}: more than {TOP_K} relevant memories")
    return profiles


def label(overrides: dict) -> str:
    if not overrides:
        return "current settings"
    return ", ".join(f"{name}={value}" for name, value in overrides.items())


def weights_for(overrides: dict):
    """Weights.from_settings() with these overrides. Raises ValueError naming the fields
    Weights has when an override names another."""
    from memories.recall.scoring import Weights

    known = {field.name for field in fields(Weights)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"Weights has no field {unknown}; it has {sorted(known)}")
    return replace(Weights.from_settings(), **overrides)


def _ingest(profiles, embedder) -> list[dict]:
    """One fresh user per profile, its memories user-scope and written by memory_create with
    vectors embedded in one batch. Returns, per profile, the user and a memory id -> key map."""
    from memories.models import Memory, Scope, User
    from memories.services import memory_create

    items = [(i, memory) for i, profile in enumerate(profiles) for memory in profile["memories"]]
    # Memory.embedding_text, so the vectors are the ones the service would compute itself.
    texts = [Memory(key=m["key"], value=m["value"]).embedding_text for _, m in items]
    vectors = embedder.embed(texts) if embedder is not None else [None] * len(texts)
    loaded = [
        {"user": User.objects.create_user(username=f"vague-{i}"), "keys": {}}
        for i in range(len(profiles))
    ]
    for (i, memory), vector in zip(items, vectors, strict=True):
        user = loaded[i]["user"]
        created = memory_create(
            actor=user,
            scope=Scope.USER,
            user=user,
            key=memory["key"],
            value=memory["value"],
            vector=vector,
        )
        loaded[i]["keys"][created.id] = memory["key"]
    return loaded


def evaluate(profiles, loaded, query_vectors, weights) -> dict:
    """Recall every question with these weights (access counting off, so settings do not
    influence each other) and count what was cut and what got in."""
    from memories.recall.recall import memory_recall
    from memories.recall.scopes import recall_scopes

    relevant = {"total": 0, "cut": 0}
    unrelated = {"total": 0, "in": 0}
    by_kind = {kind: {"total": 0, "cut": 0} for kind in KINDS}
    no_answer_results: list[int] = []
    questions = []
    i = 0
    for profile, state in zip(profiles, loaded, strict=True):
        scopes = recall_scopes(user=state["user"])
        for question in profile["questions"]:
            hits = memory_recall(
                query=question["query"],
                scopes=scopes,
                top_k=TOP_K,
                record_access=False,
                weights=weights,
                query_vector=query_vectors[i],
            )
            i += 1
            returned = [state["keys"][hit.memory.id] for hit in hits]
            cut = [key for key in question["relevant"] if key not in returned]
            let_in = [key for key in question["unrelated"] if key in returned]
            relevant["total"] += len(question["relevant"])
            relevant["cut"] += len(cut)
            unrelated["total"] += len(question["unrelated"])
            unrelated["in"] += len(let_in)
            kind = question.get("kind")
            if kind in by_kind:
                by_kind[kind]["total"] += len(question["relevant"])
                by_kind[kind]["cut"] += len(cut)
            if not question["relevant"]:
                no_answer_results.append(len(returned))
            questions.append(
                {
                    "profile": profile["name"],
                    "query": question["query"],
                    "returned": returned,
                    "cut": cut,
                    "unrelated_in": let_in,
                }
            )
    return {
        "relevant": {**relevant, "cut_share": _share(relevant["cut"], relevant["total"])},
        "unrelated": {**unrelated, "in_share": _share(unrelated["in"], unrelated["total"])},
        "relevant_cut_by_kind": {
            kind: {**counts, "cut_share": _share(counts["cut"], counts["total"])}
            for kind, counts in by_kind.items()
        },
        "no_answer": {
            "questions": len(no_answer_results),
            "mean_results": round(sum(no_answer_results) / len(no_answer_results), 2)
            if no_answer_results
            else None,
        },
        "questions": questions,
    }


def _share(part: int, total: int) -> float | None:
    return round(part / total, 4) if total else None


def run(*, grid: list[dict] | None = None, data: Path = DATA) -> dict:
    """Load the data set once, then evaluate every setting of the grid (GRID by default)."""
    from memories.embedders import get_embedder

    started = time.perf_counter()
    grid = GRID if grid is None else grid
    settings_weights = [weights_for(overrides) for overrides in grid]  # fail before loading
    profiles = load(data)
    embedder = get_embedder()
    loaded = _ingest(profiles, embedder)
    queries = [question["query"] for profile in profiles for question in profile["questions"]]
    query_vectors = embedder.embed(queries) if embedder is not None else [None] * len(queries)
    rows = []
    for overrides, weights in zip(grid, settings_weights, strict=True):
        rows.append(
            {
                "setting": label(overrides),
                "overrides": overrides,
                "weights": asdict(weights),
                **evaluate(profiles, loaded, query_vectors, weights),
            }
        )
    return {
        "data": str(Path(data).resolve().relative_to(ROOT)),
        "profiles": len(profiles),
        "memories": sum(len(profile["memories"]) for profile in profiles),
        "queries": len(queries),
        "top_k": TOP_K,
        "settings": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _percent(share: float | None, part: int | None = None, total: int | None = None) -> str:
    if share is None:
        return "–"
    counts = f" ({part}/{total})" if total is not None else ""
    return f"{share * 100:.1f}%{counts}"


def table(results: dict) -> str:
    """A markdown table per database of a results file's vague part."""
    out = []
    for database, result in results.get("vague", {}).items():
        out += [
            f"### {database}: {result['queries']} questions, {result['profiles']} profiles, "
            f"{result['memories']} memories, top_k {result['top_k']}",
            "",
            "| setting | relevant cut | unrelated in | no-answer results (mean) "
            "| cut: " + " / ".join(KINDS) + " |",
            "|---|---|---|---|---|",
        ]
        for row in result["settings"]:
            relevant, unrelated = row["relevant"], row["unrelated"]
            by_kind = " / ".join(
                _percent(row["relevant_cut_by_kind"][kind]["cut_share"]) for kind in KINDS
            )
            mean = row["no_answer"]["mean_results"]
            out.append(
                f"| {row['setting']} "
                f"| {_percent(relevant['cut_share'], relevant['cut'], relevant['total'])} "
                f"| {_percent(unrelated['in_share'], unrelated['in'], unrelated['total'])} "
                f"| {'–' if mean is None else f'{mean:.2f}'} "
                f"| {by_kind} |"
            )
        out.append("")
    return "\n".join(out)
