"""Reading an NDJSON request body as numbered lines, block by block, within a size limit."""

from collections.abc import Iterator
from typing import BinaryIO

from memories.errors import ServiceError

READ_BLOCK_BYTES = 64 * 1024


class BodyTooLarge(ServiceError):
    status_code = 413
    code = "request_too_large"


class BodyIncomplete(ServiceError):
    status_code = 400
    code = "incomplete_body"


def _read(stream: BinaryIO) -> bytes:
    try:
        return stream.read(READ_BLOCK_BYTES)
    except OSError:
        # The client stopped sending (gunicorn: NoMoreData; Django: UnreadablePostError).
        raise BodyIncomplete(
            "The request body ended before it was complete. Lines before the cut may have "
            "been imported; sending the whole file again is safe (import skips what it "
            "already holds).",
            field="body",
        ) from None


def read_blocks(stream: BinaryIO, *, max_bytes: int) -> Iterator[bytes]:
    """The stream in blocks. Raises BodyTooLarge (naming body) once more than max_bytes came,
    BodyIncomplete when the client stopped sending it."""
    total = 0
    while block := _read(stream):
        total += len(block)
        if total > max_bytes:
            detail = f"The request body is larger than {max_bytes} bytes (IMPORT_MAX_BYTES)."
            raise BodyTooLarge(detail, field="body")
        yield block


def ndjson_lines(
    stream: BinaryIO, *, max_bytes: int, max_line_bytes: int
) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each non-blank line, counted from 1. A line longer than
    max_line_bytes is cut after max_line_bytes + 1 bytes, so it can be reported as too long
    without being held whole. Raises BodyTooLarge."""
    number = 0
    line = bytearray()
    for block in read_blocks(stream, max_bytes=max_bytes):
        start = 0
        while True:
            end = block.find(b"\n", start)
            piece = block[start:] if end < 0 else block[start:end]
            room = max_line_bytes + 1 - len(line)
            if room > 0:
                line += piece[:room]
            if end < 0:
                break
            number += 1
            if line.strip():
                yield number, bytes(line)
            line.clear()
            start = end + 1
    if line.strip():
        yield number + 1, bytes(line)
