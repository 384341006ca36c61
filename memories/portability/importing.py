"""Import: NDJSON lines (an export of this or another account) written into the caller's
memories, idempotently.

Each line is matched to a memory of the caller: by `id` when the line has one (a missing id is
created with that id, so importing the file again finds it), otherwise by scope, carriers, key
and value, compared as writes compare them (memories.models.normalise), so a line never
writes a second row for a fact. A matched memory is unchanged, or updated to what the line says
(key, value, category, importance, confidence, status, deleted or not; a line matched without
id keeps the memory's own spelling of key and value). A created line that is current takes
its key: the caller's current memories holding the key in its scope before the import are
superseded by it (counted as `superseded`); memories of the same file never supersede one
another, so a file keeps what it says. valid_from, valid_until and superseded_by_id come from
the line when the memory is created (a superseded_by_id naming no memory of the caller once
the import is done is cleared). Provenance (source,
source_channel_id), recall statistics (access_count, last_accessed_at) and created_at/updated_at
come from the line only when the memory is created: an older file must not roll back what this
service has counted since. supersedes_id, owner_id, user_id and external_user_id are read back
but ignored: the memories become the caller's, and a replacement proposal is not carried over;
so are source_topic_id, source_work_session_id and source_message_ids (conversations are not
imported).

Lines come from a stream and are handled in chunks of IMPORT_CHUNK_LINES (SQLITE_CHUNK_LINES
on SQLite): each chunk is classified against the database, embedded in one call outside any
transaction, then written in one transaction, so a body of any size never sits in memory at
once and a bad line is reported, never half-written. Each chunk that is written stays
written: an import stopped half-way (a crash, a lost connection, a Conflict) has written its
first chunks, and sending the same file again completes it (the lines already written come
out unchanged). On SQLite a chunk's transaction holds the database's only write lock, so
chunks are small there and the import gives way between them (memories/write_turns.py):
other users' saves wait for one chunk (tens of ms), not for the import. The chunk's
classification is in import_plan.py, its write in import_writing.py, the lines and results
they pass around in import_lines.py.
"""

import time
from collections.abc import Iterable, Iterator

from django.db import IntegrityError, connection

from memories.errors import Conflict
from memories.models import User
from memories.portability.import_lines import (
    IMPORT_CHUNK_LINES,
    MAX_LISTED_ERRORS,
    ChunkChanged,
    ChunkOutcome,
    ImportLine,
    ImportResult,
    ImportRun,
    InvalidLine,
    LineError,
)
from memories.portability.import_plan import Planned, count_superseded, plan_chunk
from memories.portability.import_writing import clear_dangling_links, vectors_for, write_chunk
from memories.write_turns import give_way

__all__ = [
    "IMPORT_CHUNK_LINES",
    "MAX_LISTED_ERRORS",
    "ImportLine",
    "ImportResult",
    "InvalidLine",
    "LineError",
    "memory_import",
]

# A chunk whose memories change between its classification and its write is classified again.
_CHUNK_ATTEMPTS = 3
# Lines per chunk on SQLite: a chunk's transaction (the only write lock there) writes a
# created line in ~0.75 ms on the project's slow 2-core machine, so 50 hold it for ~40 ms.
# PostgreSQL locks the rows (and advisory locks the keys) it writes, so nobody else waits on
# a larger chunk there, and fewer chunks mean fewer round trips.
SQLITE_CHUNK_LINES = 50


def memory_import(
    *, actor: User, lines: Iterable[ImportLine | InvalidLine], dry_run: bool = False
) -> ImportResult:
    """Import memories of the caller line by line (see the module's docstring for what is kept
    and how lines are matched). With dry_run nothing is written, and the counts and errors are
    those a real import would report. Raises EmbedderUnavailable, Conflict (the caller's
    memories kept changing under a chunk), BodyTooLarge (from reading `lines`)."""
    result = ImportResult()
    # In a dry run the database never sees what earlier chunks would have written, so the
    # run remembers it (as digests: a few hundred bytes a line).
    planned = Planned()
    run = ImportRun()
    for chunk in _chunks(lines, chunk_lines()):
        valid = [line for line in chunk if isinstance(line, ImportLine)]
        if dry_run:
            outcome = plan_chunk(valid, actor=actor, planned=planned)
            outcome.superseded = count_superseded(outcome, planned=planned, run=run)
            run.file_ids.update(planned.by_id)
        else:
            outcome = _import_chunk(valid, actor=actor, run=run)
        result.created += outcome.created
        result.updated += outcome.updated
        result.unchanged += outcome.unchanged
        result.superseded += outcome.superseded
        invalid = [e for line in chunk if isinstance(line, InvalidLine) for e in line.errors]
        for error in sorted([*invalid, *outcome.errors], key=lambda e: e.line):
            result.add_error(error)
    if not dry_run:
        clear_dangling_links(run.links, actor=actor)
    return result


def chunk_lines() -> int:
    """Lines per chunk on this database (see SQLITE_CHUNK_LINES)."""
    if connection.vendor == "sqlite":
        return min(IMPORT_CHUNK_LINES, SQLITE_CHUNK_LINES)
    return IMPORT_CHUNK_LINES


def _import_chunk(lines: list[ImportLine], *, actor: User, run: ImportRun) -> ChunkOutcome:
    """Classify, embed (outside the transaction) and write one chunk."""
    for _ in range(_CHUNK_ATTEMPTS):
        planned = Planned()
        outcome = plan_chunk(lines, actor=actor, planned=planned)
        vectors = vectors_for(outcome.plans)
        started = time.monotonic()
        try:
            outcome.superseded = write_chunk(
                outcome.plans, vectors=vectors, actor=actor, run=run, chunk_ids=set(planned.by_id)
            )
        except (IntegrityError, ChunkChanged):
            # Another request wrote these memories meanwhile (two imports of one file at
            # once: an id about to be created exists now, or a fact without id). The
            # chunk's transaction rolled back; classified again, those lines come out
            # unchanged or updated.
            continue
        if outcome.plans:
            give_way(time.monotonic() - started)
        run.file_ids.update(planned.by_id)
        for plan in outcome.plans:
            if plan.action == "create" and plan.line.superseded_by_id is not None:
                run.links[plan.memory_id] = plan.line.superseded_by_id
        return outcome
    raise Conflict(
        "Your memories kept changing while this file was imported; import it again (lines "
        "already imported come out unchanged)."
    )


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
