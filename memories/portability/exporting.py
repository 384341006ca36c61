"""Export: every memory of a user, one JSON object per line, streamed."""

from collections.abc import Callable, Iterator

from django.db.models import QuerySet

from memories.filters.compile import filter_condition
from memories.filters.language import Node
from memories.models import Memory, User
from memories.selectors import changeable_by

EXPORT_CHUNK_ROWS = 500
EXPORT_BLOCK_BYTES = 64 * 1024


def memories_for_export(
    *, user: User, include_deleted: bool = False, memory_filter: Node | None = None
) -> QuerySet[Memory]:
    """Every memory the user may change, of every status (the soft-deleted ones only with
    include_deleted), oldest first, so a memory comes before the one that supersedes it;
    with a filter (memories.filters), those it matches."""
    memories = Memory.objects.filter(changeable_by(user))
    if memory_filter is not None:
        memories = memories.filter(filter_condition(memory_filter))
    if not include_deleted:
        memories = memories.filter(deleted_at__isnull=True)
    return memories.order_by("created_at", "id").prefetch_related("entities")


def export_lines(
    memories: QuerySet[Memory], *, line_of: Callable[[Memory], str]
) -> Iterator[bytes]:
    """The memories as NDJSON (`line_of` gives a memory's JSON), in blocks of about
    EXPORT_BLOCK_BYTES. Rows are read with .iterator(): chunks of EXPORT_CHUNK_ROWS (a
    server-side cursor on PostgreSQL), so a user with 100,000 memories is never loaded at
    once."""
    block: list[str] = []
    size = 0
    for memory in memories.iterator(chunk_size=EXPORT_CHUNK_ROWS):
        line = line_of(memory)
        block.append(line)
        block.append("\n")
        size += len(line) + 1
        if size >= EXPORT_BLOCK_BYTES:
            yield "".join(block).encode()
            block, size = [], 0
    if block:
        yield "".join(block).encode()
