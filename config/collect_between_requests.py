"""Python's cyclic garbage collector runs between requests, not in the middle of one.

By default the collector runs whenever 700 more container objects are alive than at its last
run: a search allocates some 2,000, so most searches were paused by a young collection
(~0.5 ms) and one in 15 by a middle one (3.5-5 ms, with the objects of the last few requests
to walk), measured in process. Served through gunicorn, the HTTP p95 did not move beyond the
spread between runs either way (docs/benchmarks.md); the pauses are out of the requests all
the same. Here the automatic threshold is raised above what an ordinary request allocates,
and the same schedule as Python's is kept at each request's end instead: after the answer
has been sent and the response let go, so that what the request built has been freed by
reference counting and the collector walks only what outlived it (cycles, caches). A
request that builds far more (an export, a big batch) still triggers collections as it goes.

The collection after one request still pauses the other threads of its process while it
runs; with one request at a time nobody waits for it."""

import gc
from collections.abc import Callable, Iterable
from typing import Any

# Python's own thresholds ((700, 10, 10) in 3.11), applied at request ends.
YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD = gc.get_threshold()
# Above the ~2,000 objects a search has alive at its peak, with room for larger pages.
AUTOMATIC_YOUNG_THRESHOLD = 10_000


def generation_due(counts: tuple[int, int, int]) -> int | None:
    """The generation Python would collect at these gc.get_count() counts with its own
    thresholds, or None while none is due."""
    young, middle, old = counts
    if young < YOUNG_THRESHOLD:
        return None
    if middle < MIDDLE_THRESHOLD:
        return 0
    if old < OLD_THRESHOLD:
        return 1
    return 2


def collect_if_due() -> int | None:
    """Collect the generation that is due, if any; returns it."""
    generation = generation_due(gc.get_count())
    if generation is not None:
        gc.collect(generation)
    return generation


class _ThenCollect:
    """The application's response; closing it closes that, lets it go, then collects."""

    def __init__(self, response: Iterable[bytes]) -> None:
        self._response: Any = response

    def __iter__(self):
        assert self._response is not None, "iterated after close()"
        return iter(self._response)

    def close(self) -> None:
        response, self._response = self._response, None
        try:
            if hasattr(response, "close"):
                response.close()
        finally:
            # The last reference to the response and, through it, to the request and view:
            # their objects are freed now rather than walked by the collection below.
            del response
            collect_if_due()


class CollectBetweenRequests:
    """WSGI middleware: raises the process's automatic threshold when it is built, and
    collects at each response's close (the WSGI server calls it after writing the body)."""

    def __init__(self, application: Callable) -> None:
        self.application = application
        gc.set_threshold(AUTOMATIC_YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        response = self.application(environ, start_response)
        file_wrapper = environ.get("wsgi.file_wrapper")
        if file_wrapper is not None and isinstance(response, file_wrapper):
            # The server sends a file wrapper's file itself (sendfile), knowing it by its type.
            return response
        return _ThenCollect(response)
