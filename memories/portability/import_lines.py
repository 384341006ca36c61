"""The lines of an import and what importing them does: read lines, their errors, the
result, and the plan of a chunk (memories/portability/importing.py)."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from uuid import UUID

from memories.models import (
    CarrierIds,
    Scope,
    Source,
    Status,
)

IMPORT_CHUNK_LINES = 500
# A file of garbage must not turn into a response of millions of error entries.
MAX_LISTED_ERRORS = 1000
CONTENT_FIELDS = (
    "key",
    "value",
    "category",
    "importance",
    "confidence",
    "status",
    "pinned",
    "metadata",
    "expires_at",
)


@dataclass(frozen=True)
class LineError:
    line: int
    field: str
    detail: str


@dataclass(frozen=True)
class InvalidLine:
    """A line that is not a valid memory object; nothing of it is written."""

    number: int
    errors: list[LineError]


@dataclass(frozen=True)
class ImportLine:
    """One validated line (the export's shape): what the memory should look like."""

    number: int
    key: str
    value: str
    scope: str = Scope.USER
    id: UUID | None = None
    category: str = ""
    importance: float = 0.5
    confidence: float = 1.0
    status: str = Status.ACTIVE
    pinned: bool = False
    metadata: dict = field(default_factory=dict)
    source: str = Source.MANUAL
    source_channel_id: UUID | None = None
    persona_id: UUID | None = None
    project_id: UUID | None = None
    topic_id: UUID | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    deleted_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    expires_at: datetime | None = None
    superseded_by_id: UUID | None = None
    # The entities the memory is about ({name, kind, relation, aliases}), linked on import.
    entities: tuple[dict, ...] = field(default=(), compare=False)


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded: int = 0
    errors: list[LineError] = field(default_factory=list)
    unlisted_errors: int = 0  # past MAX_LISTED_ERRORS: counted, not listed
    first_unlisted_line: int | None = None

    def add_error(self, error: LineError) -> None:
        if len(self.errors) < MAX_LISTED_ERRORS:
            self.errors.append(error)
            return
        self.unlisted_errors += 1
        if self.first_unlisted_line is None:
            self.first_unlisted_line = error.line

    def listed_errors(self) -> list[LineError]:
        """The errors, and past MAX_LISTED_ERRORS one entry saying how many more there are."""
        # first_unlisted_line is set with the first unlisted error.
        if not self.unlisted_errors or self.first_unlisted_line is None:
            return self.errors
        summary = LineError(
            self.first_unlisted_line,
            "non_field_errors",
            f"{self.unlisted_errors} more errors from this line on are not listed; fix the "
            "ones above and import the file again.",
        )
        return [*self.errors, summary]


@dataclass(frozen=True)
class Plan:
    line: ImportLine
    memory_id: UUID
    action: Literal["create", "update"]
    needs_vector: bool
    identity: CarrierIds


@dataclass
class ChunkOutcome:
    """What importing a chunk does (or, in a dry run, would do)."""

    plans: list[Plan] = field(default_factory=list)
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded: int = 0
    errors: list[LineError] = field(default_factory=list)


class ChunkChanged(Exception):
    """A memory of the chunk changed between classification and write: classify again."""


@dataclass
class ImportRun:
    """What an import has done so far: the ids of the file's memories (created or matched,
    never superseded by another line of the file), the memories already counted as
    superseded, and the created memories that name the memory that superseded them."""

    file_ids: set[UUID] = field(default_factory=set)
    superseded: set[UUID] = field(default_factory=set)
    links: dict[UUID, UUID] = field(default_factory=dict)
