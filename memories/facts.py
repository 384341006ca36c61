"""When is a write the same fact, and when does it replace one? Plain functions of texts and
memories as the caller read them; the services lock and write (memories/saving.py)."""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol
from uuid import UUID

_NOT_WORD = re.compile(r"[^\w\s]|_")


def normalise(text: str) -> str:
    """A key or value as writes compare them: case folded, punctuation and underscores as
    spaces, runs of spaces as one ("Preferred_Language" is "preferred language")."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


class Held(Protocol):
    """What a decision reads of a current memory holding the key."""

    id: UUID
    value: str
    importance: float
    confidence: float


@dataclass(frozen=True)
class SaveDecision:
    """What a write does: `existing` is the current memory that already says it (nothing
    new is written; `raised` holds the importance and confidence that rise to the write's),
    or else a new memory is written and `superseded` are the current memories it replaces."""

    kind: Literal["existing", "create"]
    existing: Held | None = None
    raised: dict = field(default_factory=dict)
    superseded: tuple = ()


def decide(
    *, value: str, importance: float, confidence: float, replace: bool, holders: Sequence[Held]
) -> SaveDecision:
    """The write of `value` under a key whose current memories (same scope, carriers and
    normalised key) are `holders`, oldest first. The same normalised value is the memory
    that says it; another value replaces all of them, unless replace is False (a key that
    deliberately holds several facts keeps them)."""
    wanted = normalise(value)
    for holder in holders:
        if normalise(holder.value) == wanted:
            raised = {
                name: new
                for name, new in (("importance", importance), ("confidence", confidence))
                if new > getattr(holder, name)
            }
            return SaveDecision("existing", existing=holder, raised=raised)
    if not replace:
        return SaveDecision("create")
    return SaveDecision("create", superseded=tuple(holders))
