"""When is a write the same fact, and when does it replace one? Plain functions of texts and
memories as the caller read them; the services lock and write (memories/saving.py)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar
from uuid import UUID

from memories.models import normalise


class Held(Protocol):
    """What a decision reads of a current memory holding the key."""

    id: UUID
    value: str
    importance: float
    confidence: float


# The caller's own holders come back in the decision (saving.py passes Memory rows).
H = TypeVar("H", bound=Held)


@dataclass(frozen=True)
class SaveDecision(Generic[H]):
    """What a write does: `existing` is the current memory that already says it (nothing
    new is written; `raised` holds the importance and confidence that rise to the write's),
    or else a new memory is written and `superseded` are the current memories it replaces."""

    kind: Literal["existing", "create"]
    existing: H | None = None
    raised: dict[str, float] = field(default_factory=dict)
    superseded: tuple[H, ...] = ()


def decide(
    *, value: str, importance: float, confidence: float, replace: bool, holders: Sequence[H]
) -> SaveDecision[H]:
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
