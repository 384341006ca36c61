"""The labelled relevance set by the way each question is asked (issue 43): a person's own
question ("first_person"), a backend's or an assistant's about "the user" ("third_person"),
the phrase a model writes when it calls `memory_recall` ("tool_call"), a search box's word or
two ("search_box"), another language ("other_language").

From the question records of bench/vague.py's evaluate() (each with its phrasing, kind,
relevant keys and the keys returned, best first), per part and phrasing:
- a question one or a few memories answer (vague, paraphrase, other language): the share
  whose relevant memory (one of them) came back in the top TOP;
- an unrelated question: the share that got nothing;
- a multi-need request: the share of the memories it needs that the hint of a model turn
  holds: the first HINT_TOP (RECALL_HINT_TOP_K, the default) that are close to the best one
  (RECALL_HINT_CLOSE_TO_BEST).
Issue 43's targets, on the reporting part: 90%, 90% and 85%, in every phrasing."""

from bench.vague_data import ALL, PARTS, PHRASINGS

TOP = 3
HINT_TOP = 5
TARGETS = {"answered_in_top": 0.90, "nothing_for_unrelated": 0.90, "needed_in_hint": 0.85}


def phrasing_figures(questions: list[dict]) -> dict:
    """{part: {phrasing: figures}} for the parts and "all"; see the module docstring. A
    record without a phrasing (results from before issue 43) counts as first_person."""
    out: dict = {}
    for part in (*PARTS, ALL):
        out[part] = {}
        for phrasing in PHRASINGS:
            asked = [
                q
                for q in questions
                if (part == ALL or q["part"] == part)
                and q.get("phrasing", "first_person") == phrasing
            ]
            out[part][phrasing] = _figures(asked)
    return out


def _figures(questions: list[dict]) -> dict:
    answered = [q for q in questions if q["kind"] not in ("unrelated", "multi_need")]
    in_top = sum(1 for q in answered if set(q["relevant"]) & set(q["returned"][:TOP]))
    unrelated = [q for q in questions if q["kind"] == "unrelated"]
    nothing = sum(1 for q in unrelated if not q["returned"])
    multi = [q for q in questions if q["kind"] == "multi_need"]
    needed = sum(len(q["relevant"]) for q in multi)
    # The hint's memories (results from before the cut: the first HINT_TOP returned).
    in_hint = sum(
        len(set(q["relevant"]) & set(q.get("hint", q["returned"][:HINT_TOP]))) for q in multi
    )
    return {
        "answered": {
            "questions": len(answered),
            "in_top": in_top,
            "share": _share(in_top, len(answered)),
        },
        "unrelated": {
            "questions": len(unrelated),
            "nothing": nothing,
            "share": _share(nothing, len(unrelated)),
        },
        "multi_need": {"needed": needed, "in_hint": in_hint, "share": _share(in_hint, needed)},
    }


def _share(part: int, total: int) -> float | None:
    return round(part / total, 4) if total else None


def _cell(share: float | None, part: int, total: int, target: float) -> str:
    if share is None:
        return "–"
    mark = "" if share >= target else " ✗"
    return f"{share * 100:.1f}% ({part}/{total}){mark}"


def table(data: dict) -> list[str]:
    """Markdown: per database, the current settings (each database's first setting), a row
    per part and phrasing. ✗ marks a figure under issue 43's target."""
    out: list[str] = []
    for database, result in data.get("vague", {}).items():
        rows = result.get("settings") or []
        if not rows or not rows[0].get("questions"):
            continue
        figures = phrasing_figures(rows[0]["questions"])
        out += [
            f"### {database}, by phrasing ({rows[0]['setting']})",
            "",
            f"| part | phrasing | relevant in the top {TOP} | unrelated: nothing "
            f"| multi-need: needed in the hint (first {HINT_TOP}, close to the best) |",
            "|---|---|---|---|---|",
        ]
        for part in (*PARTS, ALL):
            for phrasing in PHRASINGS:
                f = figures[part][phrasing]
                answered, unrelated, multi = f["answered"], f["unrelated"], f["multi_need"]
                cells = [
                    _cell(
                        answered["share"],
                        answered["in_top"],
                        answered["questions"],
                        TARGETS["answered_in_top"],
                    ),
                    _cell(
                        unrelated["share"],
                        unrelated["nothing"],
                        unrelated["questions"],
                        TARGETS["nothing_for_unrelated"],
                    ),
                    _cell(
                        multi["share"], multi["in_hint"], multi["needed"], TARGETS["needed_in_hint"]
                    ),
                ]
                out.append(f"| {part} | {phrasing.replace('_', ' ')} | " + " | ".join(cells) + " |")
        out.append("")
    return out
