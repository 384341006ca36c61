"""LOCOMO dev as the benchmark uses it: every dialog turn is one memory with the text
`[session date] speaker: text`; every question of categories 1-4 with evidence is a query
against its own conversation. The data file is given on the command line (CC BY-NC 4.0;
see the notice beside it) and is never copied into the repository."""

import json
import re
from dataclasses import dataclass
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]


def load(path: str | Path, *, limit: int | None = None) -> list[Conversation]:
    samples = json.loads(Path(path).read_text())
    conversations = []
    for sample in samples[:limit]:
        conv = sample["conversation"]
        sessions = sorted(
            int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key))
        )
        turns = []
        for n in sessions:
            date = conv[f"session_{n}_date_time"]
            for turn in conv[f"session_{n}"]:
                turns.append(Turn(turn["dia_id"], f"[{date}] {turn['speaker']}: {turn['text']}"))
        known = {turn.dia_id for turn in turns}
        questions = []
        for qa in sample["qa"]:
            evidence = frozenset(e for e in qa.get("evidence", []) if e in known)
            if qa["category"] in CATEGORIES and evidence:
                questions.append(Question(str(qa["question"]), qa["category"], evidence))
        conversations.append(Conversation(sample["sample_id"], turns, questions))
    return conversations
