"""The relationship set (tests/data/relationship_questions.json, issue 45) against the context
hint. Each profile is one user's ordinary memories: a partner, children, pets, parents and
siblings, colleagues and friends, and hobbies, work, food and tools that are about nobody
else; the memories about someone name them (`entities`, as a product's save or extraction
gives them). A "relation" question names one of those entities (by name or relation: "what
does Sofia like?", "gift ideas for my wife") or a group of them ("this weekend as a family",
"user pets"), in every phrasing of bench/vague_phrasings.py; its relevant memories are the
named entities' or group's. An "unrelated" question needs no memory, many with family words
used about the world ("who was the wife of Henry VIII?").

Each profile is loaded three times, into fresh users: once with every memory's entities linked
right after the memory is written (memories.entities.linking.entities_link, memory by memory,
in the set's order, as a product's saves do); once with none named, the service reading them
from each memory's words (entities_link_read, as a plain save does); once without links, so
the links' effect shows. Every
question asks memories.recall.hint.memory_hint as POST /api/memories/context does (top_k
RECALL_HINT_TOP_K, the MEMORY_HINT_BUDGET_CHARS budget), inside a transaction rolled back after
it: the access counts memory_hint records never reach the next question, which sees the user
as loaded.

Figures per condition, part ("tune", "report", "all") and phrasing:
- a relation question is complete when its relevant memories are all in the hint (when more
  than HINT_TOP are relevant: when HINT_TOP of them fill it), and has one when at least one is;
- an unrelated question's hint is empty or not.
Issue 45's target, on the reporting part: 90% complete, 90% of unrelated questions empty.

    python -m bench relations --db sqlite,postgresql
"""

import argparse
import datetime as dt
import secrets
import shlex
import sys
import time
from pathlib import Path

from bench import vague_data
from bench.vague_data import ALL, PARTS, PHRASINGS, RELATION, ROOT

DATA = ROOT / "tests" / "data" / "relationship_questions.json"
CLASSES = ("unrelated", RELATION)
HINT_TOP = 5
TARGET = 0.90
# linked: the entities the set names, as a product's save or extraction gives them; read: none
# named, the service reads them from each memory's words, as a plain save does
# (memories.entities.linking.entities_link_read); not_linked: no entity at all.
CONDITIONS = ("linked", "read", "not_linked")
RESULTS_NAME = "issue45/relations"


def load(path: Path = DATA) -> list[dict]:
    """The profiles, checked as bench/vague_data.load checks its set, with the classes of
    this one; raises ValueError naming the first memory or question that breaks a rule."""
    return vague_data.load(path, classes=CLASSES)


def _ingest(profiles, vectors, *, condition: str, tag: str) -> list[dict]:
    """One fresh user per profile, its memories user-scope, written by memory_create with the
    given vectors; each memory's entities linked right after it is written as the condition
    says (CONDITIONS). Per profile: the user and a memory id -> key map."""
    from django.db import transaction

    from memories.entities.linking import Mention, entities_link, entities_link_read
    from memories.models import Scope, User
    from memories.services import memory_create

    loaded = []
    vectors = iter(vectors)
    for i, profile in enumerate(profiles):
        user = User.objects.create_user(username=f"relations-{tag}-{i}-{condition}")
        keys = {}
        for memory in profile["memories"]:
            with transaction.atomic():
                created = memory_create(
                    actor=user,
                    scope=Scope.USER,
                    user=user,
                    key=memory["key"],
                    value=memory["value"],
                    vector=next(vectors),
                )
                if condition == "linked":
                    entities_link(created, [Mention(**e) for e in memory.get("entities", [])])
                elif condition == "read":
                    entities_link_read(created)
            keys[created.id] = memory["key"]
        loaded.append({"user": user, "keys": keys})
    return loaded


def _ask(profile: dict, question: dict, state: dict) -> dict:
    """The hint memory_hint gives the question, as a record; for a question it fails (a
    relation question not complete, an unrelated one with a hint), also why: the memories the
    query's entity evidence reaches, what recall returned (the gate's choice, best first), and
    the first ten by score whatever the gate says, with their relevance and entity parts."""
    from django.conf import settings
    from django.db import transaction

    from memories.recall.entities import entity_evidence
    from memories.recall.hint import memory_hint
    from memories.recall.recall import memory_recall
    from memories.recall.scopes import recall_scopes

    keys = state["keys"]
    scopes = recall_scopes(user=state["user"])
    with transaction.atomic():
        _, used = memory_hint(
            query=question["query"],
            scopes=scopes,
            top_k=settings.RECALL_HINT_TOP_K,
            budget=settings.MEMORY_HINT_BUDGET_CHARS,
        )
        transaction.set_rollback(True)
    hint = [keys[hit.memory.id] for hit in used][:HINT_TOP]
    relevant = question["relevant"]
    record = {
        "profile": profile["name"],
        "part": question["part"],
        "kind": question["kind"],
        "phrasing": question["phrasing"],
        "query": question["query"],
        "relevant": relevant,
        "hint": hint,
        "unrelated_in": [key for key in question["unrelated"] if key in hint],
    }
    for extra in ("lang", "topic", "family_word"):
        if extra in question:
            record[extra] = question[extra]
    if question["kind"] == RELATION:
        record["complete"], record["any"] = covered(relevant, hint)
        failed = not record["complete"]
    else:
        failed = bool(hint)
    if failed:
        evidence = entity_evidence(query=question["query"], scopes=scopes)
        record["entity_evidence"] = {
            keys[memory_id]: round(value, 2)
            for memory_id, value in evidence.items()
            if memory_id in keys
        }
        gated = memory_recall(query=question["query"], scopes=scopes, top_k=10, record_access=False)
        record["recalled"] = [keys[hit.memory.id] for hit in gated]
        ranked = memory_recall(
            query=question["query"],
            scopes=scopes,
            top_k=10,
            record_access=False,
            min_relevance=0.0,
        )
        record["ranked"] = [
            {
                "key": keys[hit.memory.id],
                "relevance": round(hit.score.relevance, 3),
                "entity": round(hit.score.entity, 3),
            }
            for hit in ranked
        ]
    return record


def covered(relevant: list[str], hint: list[str]) -> tuple[bool, bool]:
    """(complete, any): whether the hint's first HINT_TOP hold every relevant memory (when
    more than HINT_TOP are relevant: are all relevant ones), and whether they hold one."""
    found = sum(1 for key in hint[:HINT_TOP] if key in relevant)
    return found >= min(HINT_TOP, len(relevant)), found > 0


def figures(records: list[dict]) -> dict:
    """{part: {phrasing or "all": figures}} for the parts and "all": relation questions
    (`complete`, `any`, their shares, and the memories labelled unrelated that got into the
    hint) and unrelated questions (`empty` hints and their share; `family_word`: the same
    for those that use a word for a relative or a pet about the world)."""
    out: dict = {}
    for part in (*PARTS, ALL):
        out[part] = {}
        for phrasing in (*PHRASINGS, ALL):
            asked = [
                r
                for r in records
                if (part == ALL or r["part"] == part) and phrasing in (ALL, r["phrasing"])
            ]
            relation = [r for r in asked if r["kind"] == RELATION]
            unrelated = [r for r in asked if r["kind"] == "unrelated"]
            complete = sum(1 for r in relation if r["complete"])
            some = sum(1 for r in relation if r["any"])
            empty = sum(1 for r in unrelated if not r["hint"])
            worded = [r for r in unrelated if r.get("family_word")]
            let_in = sum(len(r["unrelated_in"]) for r in relation)
            hinted = sum(len(r["hint"]) for r in relation)
            out[part][phrasing] = {
                "relation": {
                    "questions": len(relation),
                    "complete": complete,
                    "complete_share": _share(complete, len(relation)),
                    "any": some,
                    "any_share": _share(some, len(relation)),
                    "hint_memories": hinted,
                    "unrelated_in_hint": let_in,
                },
                "unrelated": {
                    "questions": len(unrelated),
                    "empty": empty,
                    "empty_share": _share(empty, len(unrelated)),
                    # Those with a family word used about the world ("the wife of Henry VIII").
                    "family_word": {
                        "questions": len(worded),
                        "empty": sum(1 for r in worded if not r["hint"]),
                    },
                },
            }
    return out


def _share(part: int, total: int) -> float | None:
    return round(part / total, 4) if total else None


def run(*, data: Path = DATA) -> dict:
    """Load the set twice (entities linked, not linked) and ask every question of each; needs
    Django set up on a database it may write users and memories to (bench.worker)."""
    from django.conf import settings

    from memories.embeddings.embedders import get_embedder
    from memories.models import Entity, Memory

    started = time.perf_counter()
    profiles = load(data)
    embedder = get_embedder()
    items = [memory for profile in profiles for memory in profile["memories"]]
    # Memory.embedding_text: the vectors the service would compute itself.
    texts = [Memory(key=m["key"], value=m["value"]).embedding_text for m in items]
    vectors = embedder.embed(texts)
    tag = secrets.token_hex(3)
    conditions = {}
    for condition in CONDITIONS:
        began = time.perf_counter()
        loaded = _ingest(profiles, vectors, condition=condition, tag=tag)
        users = [state["user"].id for state in loaded]
        ingested = time.perf_counter() - began
        records = [
            _ask(profile, question, state)
            for profile, state in zip(profiles, loaded, strict=True)
            for question in profile["questions"]
        ]
        conditions[condition] = {
            "entities": Entity.objects.filter(user_id__in=users).count(),
            "ingest_seconds": round(ingested, 1),
            "ask_seconds": round(time.perf_counter() - began - ingested, 1),
            "figures": figures(records),
            "questions": records,
        }
    questions = [q for profile in profiles for q in profile["questions"]]
    return {
        "data": str(Path(data).resolve().relative_to(ROOT)),
        "embedder": getattr(embedder, "model_name", None),
        "profiles": len(profiles),
        "profiles_by_part": {
            part: sum(1 for profile in profiles if profile["part"] == part) for part in PARTS
        },
        "memories": len(items),
        "questions_by_part_and_kind": {
            part: {
                kind: sum(1 for q in questions if q["part"] == part and q["kind"] == kind)
                for kind in CLASSES
            }
            for part in PARTS
        },
        "hint": {
            "how": "memory_hint per question, in a transaction rolled back after it",
            "top_k": settings.RECALL_HINT_TOP_K,
            "budget_chars": settings.MEMORY_HINT_BUDGET_CHARS,
            "close_to_best": settings.RECALL_HINT_CLOSE_TO_BEST,
        },
        "conditions": conditions,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _cell(share: float | None, part: int, total: int) -> str:
    if share is None:
        return "–"
    mark = "" if share >= TARGET else " ✗"
    return f"{share * 100:.1f}% ({part}/{total}){mark}"


def table(results: dict) -> str:
    """Markdown: per database a row per part and phrasing, the figures with entities linked
    and without (✗: under issue 45's 90%); then the report part's failing questions with
    links, each with its relevant memories and the hint it got."""
    out: list[str] = []
    for database, result in results.get("relations", {}).items():
        # Results from before the "read" condition have two.
        present = [c for c in CONDITIONS if c in result["conditions"]]
        by_condition = {c: result["conditions"][c]["figures"] for c in present}
        out += [
            f"### {database}: {result['profiles']} profiles, {result['memories']} memories, "
            f"hint top {HINT_TOP}, embedder {result.get('embedder')}",
            "",
            "| part | phrasing | "
            + " | ".join(
                f"{condition.replace('_', ' ')}: {column}"
                for condition in present
                for column in ("all in hint", "at least one", "unrelated empty")
            )
            + " |",
            "|---|---|" + "---|" * (3 * len(present)),
        ]
        for part in (*PARTS, ALL):
            for phrasing in (*PHRASINGS, ALL):
                cells = []
                for condition in present:
                    f = by_condition[condition][part][phrasing]
                    rel, unrel = f["relation"], f["unrelated"]
                    cells += [
                        _cell(rel["complete_share"], rel["complete"], rel["questions"]),
                        _cell(rel["any_share"], rel["any"], rel["questions"]),
                        _cell(unrel["empty_share"], unrel["empty"], unrel["questions"]),
                    ]
                label = "every phrasing" if phrasing == ALL else phrasing.replace("_", " ")
                out.append(f"| {part} | {label} | " + " | ".join(cells) + " |")
        for part in (*PARTS, ALL):
            counts = []
            for condition in present:
                unrelated = by_condition[condition][part][ALL]["unrelated"]
                worded = unrelated["family_word"]
                other = unrelated["questions"] - worded["questions"]
                counts.append(
                    f"{condition.replace('_', ' ')}: with a family word {worded['empty']}/"
                    f"{worded['questions']}, without {unrelated['empty'] - worded['empty']}/{other}"
                )
            out.append(f"\nUnrelated questions with an empty hint, {part}: " + "; ".join(counts))
        out += ["", f"Failing report-part questions, {database}, entities linked:", ""]
        for record in result["conditions"]["linked"]["questions"]:
            if record["part"] != "report":
                continue
            if record["kind"] == RELATION and not record["complete"]:
                missing = [key for key in record["relevant"] if key not in record["hint"]]
                out.append(
                    f"- {record['profile']}, {record['phrasing']}: {record['query']!r}: "
                    f"hint {record['hint']}, missing {missing}, entity evidence "
                    f"{sorted(record.get('entity_evidence', {}))}"
                )
            elif record["kind"] == "unrelated" and record["hint"]:
                out.append(
                    f"- {record['profile']}, {record['phrasing']} (unrelated): "
                    f"{record['query']!r}: hint {record['hint']}, entity evidence "
                    f"{sorted(record.get('entity_evidence', {}))}"
                )
        out.append("")
    return "\n".join(out)


def main(argv: list[str], *, worker) -> None:
    """`python -m bench relations [--db sqlite,postgresql] [--name NAME]`: each database in a
    worker of its own (`worker`: bench.cli's, which dispatches here), the results in
    bench/results/NAME.json (issue45/relations by default), the table printed."""
    from bench.common import (
        DATABASES,
        embedder_description,
        git_commit,
        machine,
        results_write,
    )

    parser = argparse.ArgumentParser(prog="python -m bench relations", description=__doc__)
    parser.add_argument("--db", default=",".join(DATABASES), help="sqlite,postgresql")
    parser.add_argument("--name", default=RESULTS_NAME, help="results file name")
    args = parser.parse_args(argv)
    databases = [d.strip() for d in args.db.split(",") if d.strip()]
    for database in databases:
        if database not in DATABASES:
            parser.error(f"unknown database {database!r}")
    started = time.perf_counter()
    results: dict = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python -m bench relations " + shlex.join(argv),
            "machine": machine(),
            "git": git_commit(),
            "embedder": embedder_description(),
        },
        "relations": {},
    }
    pg = None
    if "postgresql" in databases:
        from bench.pg import BenchPostgres

        pg = BenchPostgres()
    try:
        for database in databases:
            results["relations"][database] = worker("relations", database, [], pg)
    finally:
        if pg is not None:
            pg.stop()
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    results_write(args.name, results)
    print(table(results))


if __name__ == "__main__":
    sys.exit("usage: python -m bench relations [--db sqlite,postgresql] [--name NAME]")
