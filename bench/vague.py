"""The labelled relevance set (tests/data/vague_questions.json) against the service's recall,
for each setting of a grid of Weights overrides. Each question is of one of four classes:
"unrelated" (no memory of its profile helps: the right answer is nothing), "vague" (a loose
request one or a few memories serve), "paraphrase" (a memory's fact in other words) and
"other_language" (asked in another language than the memory that answers it). Profiles are
split into a "tune" part and a "report" part, never tuned on.

Reports, per part ("tune", "report", "all") and class: for unrelated questions the share that
got nothing back; for the three related classes the share of questions whose relevant
memories all came back ("kept") and the share of relevant memories kept; and the share of
memories labelled unrelated that got in. Runs inside a worker whose Django is already set up
on a fresh database (see bench.worker); `summary(row)` flattens one setting's figures for
code that compares settings.

    python -m bench vague --db sqlite                       # the GRID below
    python -m bench vague --db sqlite --grid '[{}]'         # the current settings only
    python -m bench.vague summary bench/results/vague.json  # a results file's figures, flat
"""

import json
import secrets
import sys
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

from bench.vague_data import (  # noqa: F401 (load and the names are bench.vague's API)
    ALL,
    CLASSES,
    DATA,
    KINDS,
    PARTS,
    PHRASINGS,
    RELATED,
    ROOT,
    TOP_K,
    TOPICS,
    load,
)

# One setting per entry: overrides of memories.recall.scoring.Weights, applied as
# dataclasses.replace(Weights.from_settings(), **overrides); {} is the current settings.
# The floors are on the calibrated scale (memories/recall/calibration.py). The first
# settings keep everything (the most that can get in) and take the question classifier and
# the near-best rule away in turn; the rest move one setting around the chosen one.
EVERYTHING = -99.0
GRID: list[dict] = [
    {},
    {"similarity_floor": EVERYTHING},
    # Calibrated similarity alone: no question classifier, no near-best rule.
    {"about_user_weight": 0.0, "about_user_floor": 99.0, "similarity_floor": 2.0},
    {"about_user_weight": 0.0, "about_user_floor": 99.0, "similarity_floor": 3.0},
    {"about_user_weight": 0.0, "about_user_floor": 99.0, "similarity_floor": 4.0},
    # No near-best rule.
    {"about_user_floor": 99.0},
    {"similarity_floor": 1.5},
    {"similarity_floor": 2.5},
    {"similarity_floor": 3.0},
    {"about_user_weight": 1.0},
    {"about_user_weight": 2.0},
    {"about_user_floor": 0.0},
    {"about_user_floor": 1.0},
    # The cap on the classifier's bonus: less trades vague requests for fewer memories per
    # question plainly about the user.
    {"about_user_cap": 1.0},
    {"about_user_cap": 1.5},
    {"about_user_cap": 2.0},
    {"near_best_band": 0.5},
    {"near_best_band": 1.5},
    {"keyword_weight": 0.0},
    {"keyword_weight": 2.0},
    # Where the vector half of relevance saturates (ranking and the hint's cut, not the gate).
    {"similarity_span": 8.0},
    {"similarity_span": 12.0},
    # How much of a language's pull a memory in another language than the question is lifted
    # by (calibration.py): none, as before issue 43's last change, and around the chosen 0.5.
    {"language_offset": 0.0},
    {"language_offset": 0.25},
    {"language_offset": 1.0},
]


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
    vectors embedded in one batch, each linked to the entities its words name, as a save that
    names none is (entities_link_read). Returns, per profile, the user and a memory id -> key
    map. The user names carry a random tag, so one database can be loaded more than once."""
    from memories.entities.linking import entities_link_read
    from memories.models import Memory, Scope, User
    from memories.services import memory_create

    items = [(i, memory) for i, profile in enumerate(profiles) for memory in profile["memories"]]
    # Memory.embedding_text, so the vectors are the ones the service would compute itself.
    texts = [Memory(key=m["key"], value=m["value"]).embedding_text for _, m in items]
    vectors = embedder.embed(texts) if embedder is not None else [None] * len(texts)
    tag = secrets.token_hex(3)
    loaded = [
        {"user": User.objects.create_user(username=f"vague-{tag}-{i}"), "keys": {}}
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
        entities_link_read(created)
        loaded[i]["keys"][created.id] = memory["key"]
    return loaded


def _embed_queries(embedder, queries: list[str]) -> list:
    if embedder is None:
        return [None] * len(queries)
    # Embedders that tell questions from memories (e5's "query: ") have embed_queries.
    embed = getattr(embedder, "embed_queries", None) or embedder.embed
    return embed(queries)


def evaluate(profiles, loaded, query_vectors, weights, hint_share=None) -> dict:
    """Recall every question with these weights (access counting off, so settings do not
    influence each other); what came back per question, and the figures per part and class
    (`by_part`, see figures()). Also the older totals: relevant memories cut, unrelated ones
    let in, cut per class, results of the questions no memory answers."""
    from django.conf import settings

    from memories.recall.recall import close_to_best, memory_recall
    from memories.recall.scopes import recall_scopes

    hint_share = settings.RECALL_HINT_CLOSE_TO_BEST if hint_share is None else hint_share
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
            # What the hint of a model turn would hold: its first RECALL_HINT_TOP_K, close
            # to the best one (memories.recall.hint.memory_hint).
            in_hint = close_to_best(hits[: settings.RECALL_HINT_TOP_K], hint_share)
            record = {
                "profile": profile["name"],
                "part": question["part"],
                "kind": question["kind"],
                "query": question["query"],
                "relevant": question["relevant"],
                "returned": returned,
                "hint": [state["keys"][hit.memory.id] for hit in in_hint],
                "cut": [key for key in question["relevant"] if key not in returned],
                "unrelated_in": [key for key in question["unrelated"] if key in returned],
                "unrelated_total": len(question["unrelated"]),
            }
            for extra in ("topic", "lang", "phrasing"):
                if extra in question:
                    record[extra] = question[extra]
            questions.append(record)

    relevant = sum(len(q["relevant"]) for q in questions)
    cut = sum(len(q["cut"]) for q in questions)
    unrelated = sum(q["unrelated_total"] for q in questions)
    let_in = sum(len(q["unrelated_in"]) for q in questions)
    by_kind = {}
    for kind in RELATED:
        of_kind = [q for q in questions if q["kind"] == kind]
        total = sum(len(q["relevant"]) for q in of_kind)
        kind_cut = sum(len(q["cut"]) for q in of_kind)
        by_kind[kind] = {"total": total, "cut": kind_cut, "cut_share": _share(kind_cut, total)}
    no_answer = [len(q["returned"]) for q in questions if not q["relevant"]]
    return {
        "by_part": figures(questions),
        "relevant": {"total": relevant, "cut": cut, "cut_share": _share(cut, relevant)},
        "unrelated": {"total": unrelated, "in": let_in, "in_share": _share(let_in, unrelated)},
        "relevant_cut_by_kind": by_kind,
        "no_answer": {
            "questions": len(no_answer),
            "mean_results": round(sum(no_answer) / len(no_answer), 2) if no_answer else None,
        },
        "questions": questions,
    }


def figures(questions: list[dict]) -> dict:
    """Per part (PARTS and "all") and class, from evaluate()'s question records:
    - unrelated: how many questions got nothing back (`nothing_returned_share`), the mean
      number of results, and the same per topic;
    - vague, paraphrase, other_language: how many questions had every relevant memory come
      back (`kept_share`) and how many of their relevant memories came back
      (`relevant_kept_share`);
    - every class, and the part as a whole (`unrelated_memories`): the share of memories
      labelled unrelated that got in (`in_share`)."""
    out = {}
    for part in (*PARTS, ALL):
        in_part = [q for q in questions if part == ALL or q["part"] == part]
        out[part] = {"questions": len(in_part), "unrelated_memories": _let_in(in_part)}
        for kind in CLASSES:
            of_kind = [q for q in in_part if q["kind"] == kind]
            if kind == "unrelated":
                counts = _nothing_returned(of_kind)
                counts["by_topic"] = {
                    topic: _nothing_returned([q for q in of_kind if q.get("topic") == topic])
                    for topic in TOPICS
                }
            else:
                counts = _kept(of_kind)
            counts["unrelated_memories"] = _let_in(of_kind)
            out[part][kind] = counts
    return out


def _nothing_returned(questions: list[dict]) -> dict:
    nothing = sum(1 for q in questions if not q["returned"])
    results = sum(len(q["returned"]) for q in questions)
    return {
        "questions": len(questions),
        "nothing_returned": nothing,
        "nothing_returned_share": _share(nothing, len(questions)),
        "mean_results": round(results / len(questions), 2) if questions else None,
    }


def _kept(questions: list[dict]) -> dict:
    all_kept = sum(1 for q in questions if not q["cut"])
    relevant = sum(len(q["relevant"]) for q in questions)
    kept = relevant - sum(len(q["cut"]) for q in questions)
    return {
        "questions": len(questions),
        "all_kept": all_kept,
        "kept_share": _share(all_kept, len(questions)),
        "relevant": relevant,
        "relevant_kept": kept,
        "relevant_kept_share": _share(kept, relevant),
    }


def _let_in(questions: list[dict]) -> dict:
    total = sum(q["unrelated_total"] for q in questions)
    let_in = sum(len(q["unrelated_in"]) for q in questions)
    return {"total": total, "in": let_in, "in_share": _share(let_in, total)}


def summary(row: dict) -> dict:
    """One setting's figures (a row of run()'s "settings", or evaluate()'s result) as a flat
    dict of "<part>.<class>.<figure>" -> number, parts "tune", "report" and "all":
    `<part>.unrelated.nothing_returned_share` (and `.questions`, `.mean_results`, per topic
    `<part>.unrelated.<topic>.nothing_returned_share`), `<part>.<related class>.kept_share`
    and `.relevant_kept_share` (and `.questions`), `<part>.<class>.unrelated_in_share`, and
    `<part>.unrelated_memories.in_share` over the part's questions. Raises ValueError for a
    row from before the classes and parts (no per-question part and kind)."""
    by_part = row.get("by_part")
    if by_part is None:
        questions = row.get("questions", [])
        if not questions or any("part" not in q or "kind" not in q for q in questions):
            raise ValueError("this row predates the parts and classes of the data set")
        by_part = figures(questions)
    flat: dict = {}
    for part, counts in by_part.items():
        flat[f"{part}.questions"] = counts["questions"]
        flat[f"{part}.unrelated_memories.in_share"] = counts["unrelated_memories"]["in_share"]
        for kind in CLASSES:
            if kind not in counts:  # results from before the class
                continue
            of_kind = counts[kind]
            prefix = f"{part}.{kind}"
            flat[f"{prefix}.questions"] = of_kind["questions"]
            if kind == "unrelated":
                flat[f"{prefix}.nothing_returned_share"] = of_kind["nothing_returned_share"]
                flat[f"{prefix}.mean_results"] = of_kind["mean_results"]
                for topic, by_topic in of_kind["by_topic"].items():
                    share = by_topic["nothing_returned_share"]
                    flat[f"{prefix}.{topic}.nothing_returned_share"] = share
            else:
                flat[f"{prefix}.kept_share"] = of_kind["kept_share"]
                flat[f"{prefix}.relevant_kept_share"] = of_kind["relevant_kept_share"]
            flat[f"{prefix}.unrelated_in_share"] = of_kind["unrelated_memories"]["in_share"]
    return flat


def _share(part: int, total: int) -> float | None:
    return round(part / total, 4) if total else None


def run(*, grid: list[dict] | None = None, data: Path = DATA) -> dict:
    """Load the data set once, then evaluate every setting of the grid (GRID by default)."""
    from memories.embeddings.embedders import get_embedder

    started = time.perf_counter()
    grid = GRID if grid is None else grid
    settings_weights = [weights_for(overrides) for overrides in grid]  # fail before loading
    profiles = load(data)
    embedder = get_embedder()
    loaded = _ingest(profiles, embedder)
    queries = [question["query"] for profile in profiles for question in profile["questions"]]
    query_vectors = _embed_queries(embedder, queries)
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
    questions = [question for profile in profiles for question in profile["questions"]]
    return {
        "data": str(Path(data).resolve().relative_to(ROOT)),
        "embedder": getattr(embedder, "model_name", None),
        "profiles": len(profiles),
        "profiles_by_part": {
            part: sum(1 for profile in profiles if profile["part"] == part) for part in PARTS
        },
        "memories": sum(len(profile["memories"]) for profile in profiles),
        "queries": len(queries),
        "queries_by_part_and_class": {
            part: {
                kind: sum(1 for q in questions if q["part"] == part and q["kind"] == kind)
                for kind in CLASSES
            }
            for part in PARTS
        },
        "top_k": TOP_K,
        "settings": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }


def measure(overrides: dict | None = None, *, data: Path = DATA) -> dict:
    """summary() of one setting (the current settings by default), without the grid. Needs
    Django set up on a database it may write users and memories to (as in bench.worker)."""
    result = run(grid=[overrides or {}], data=data)
    return summary(result["settings"][0])


def _percent(share: float | None, part: int | None = None, total: int | None = None) -> str:
    if share is None:
        return "–"
    counts = f" ({part}/{total})" if total is not None else ""
    return f"{share * 100:.1f}%{counts}"


def table(results: dict) -> str:
    """A markdown table per database of a results file's vague part: per setting and part,
    the share of unrelated questions that got nothing back, the share of vague, paraphrased
    and other-language questions whose relevant memories were all kept, and the share of
    memories labelled unrelated that got in. Results from before the classes and parts get
    the older table."""
    out = []
    for database, result in results.get("vague", {}).items():
        rows = result["settings"]
        if rows and "by_part" not in rows[0]:
            out += _old_table(database, result)
            continue
        embedder = f", embedder {result['embedder']}" if result.get("embedder") else ""
        by_part = result.get("profiles_by_part", {})
        split = ", ".join(f"{part} {by_part[part]}" for part in PARTS if part in by_part)
        out += [
            f"### {database}: {result['queries']} questions, {result['profiles']} profiles"
            f"{f' ({split})' if split else ''}, {result['memories']} memories, "
            f"top_k {result['top_k']}{embedder}",
            "",
            "| setting | part | unrelated: nothing returned | vague: all kept "
            "| paraphrase: all kept | other language: all kept | unrelated memories let in |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            for part in (*PARTS, ALL):
                counts = row["by_part"][part]
                unrelated = counts["unrelated"]
                cells = [
                    _percent(
                        unrelated["nothing_returned_share"],
                        unrelated["nothing_returned"],
                        unrelated["questions"],
                    )
                ]
                for kind in RELATED:
                    kept = counts[kind]
                    cells.append(_percent(kept["kept_share"], kept["all_kept"], kept["questions"]))
                let_in = counts["unrelated_memories"]
                cells.append(_percent(let_in["in_share"], let_in["in"], let_in["total"]))
                out.append(f"| {row['setting']} | {part} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def _old_table(database: str, result: dict) -> list[str]:
    """The table of results written before the data set had classes and parts."""
    kinds = ("vague", "broad", "paraphrase")
    out = [
        f"### {database}: {result['queries']} questions, {result['profiles']} profiles, "
        f"{result['memories']} memories, top_k {result['top_k']}",
        "",
        "| setting | relevant cut | unrelated in | no-answer results (mean) "
        "| cut: " + " / ".join(kinds) + " |",
        "|---|---|---|---|---|",
    ]
    for row in result["settings"]:
        relevant, unrelated = row["relevant"], row["unrelated"]
        by_kind = " / ".join(
            _percent(row["relevant_cut_by_kind"].get(kind, {}).get("cut_share")) for kind in kinds
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
    return out


def main(argv: list[str]) -> None:
    """`python -m bench.vague summary [RESULTS.json]`: summary() of every setting of a
    results file (bench/results/vague.json by default), one JSON object a line."""
    if not argv or argv[0] != "summary" or len(argv) > 2:
        sys.exit("usage: python -m bench.vague summary [RESULTS.json]")
    path = Path(argv[1]) if len(argv) == 2 else ROOT / "bench" / "results" / "vague.json"
    results = json.loads(path.read_text())
    for database, result in results.get("vague", {}).items():
        for row in result["settings"]:
            line = {"database": database, "setting": row["setting"], **summary(row)}
            print(json.dumps(line))


if __name__ == "__main__":
    main(sys.argv[1:])
