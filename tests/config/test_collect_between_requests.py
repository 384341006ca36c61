"""The garbage collector runs at a response's close, after the response is let go, and not in
the middle of an ordinary request (config/collect_between_requests.py)."""

import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from config.collect_between_requests import (
    AUTOMATIC_YOUNG_THRESHOLD,
    MIDDLE_THRESHOLD,
    OLD_THRESHOLD,
    YOUNG_THRESHOLD,
    CollectBetweenRequests,
    generation_due,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def collector_restored():
    """Each test starts from a fresh count with automatic collection as the test wants it,
    and leaves the process's collector as it found it."""
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.collect()
    yield
    gc.set_threshold(*thresholds)
    if enabled:
        gc.enable()
    else:
        gc.disable()


class Cycle:
    """Garbage only the cyclic collector frees: it refers to itself, with many objects."""

    def __init__(self, objects: int) -> None:
        self.itself = self
        self.objects = [[] for _ in range(objects)]


class Response:
    def __init__(self, cycle: Cycle, seen: dict) -> None:
        self.cycle = cycle
        self.seen = seen

    def __iter__(self):
        return iter([b"ok"])

    def close(self) -> None:
        self.seen["closed"] = True


def application_leaving(objects: int, seen: dict):
    def application(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        cycle = Cycle(objects)
        seen["cycle"] = weakref.ref(cycle)
        response = Response(cycle, seen)
        seen["response"] = weakref.ref(response)
        del cycle
        return response

    return application


def serve(application) -> list[bytes]:
    """One request as a WSGI server makes it: call, write the body, close."""
    result = application({"REQUEST_METHOD": "GET", "PATH_INFO": "/"}, lambda *_: None)
    try:
        return list(result)
    finally:
        result.close()


@pytest.mark.parametrize(
    ("counts", "generation"),
    [
        ((0, 0, 0), None),
        ((YOUNG_THRESHOLD - 1, MIDDLE_THRESHOLD, OLD_THRESHOLD), None),
        ((YOUNG_THRESHOLD, 0, 0), 0),
        ((YOUNG_THRESHOLD * 5, MIDDLE_THRESHOLD - 1, OLD_THRESHOLD), 0),
        ((YOUNG_THRESHOLD, MIDDLE_THRESHOLD, 0), 1),
        ((YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD - 1), 1),
        ((YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD), 2),
    ],
)
def test_the_generation_due_is_the_one_python_would_collect(counts, generation):
    assert generation_due(counts) == generation


def test_what_a_request_left_in_cycles_is_collected_when_its_response_closes():
    seen: dict = {}
    middleware = CollectBetweenRequests(application_leaving(1000, seen))
    gc.disable()  # only the middleware collects
    gc.collect()

    assert serve(middleware) == [b"ok"]

    assert seen["closed"]
    assert seen["response"]() is None, "the middleware still holds the response"
    assert seen["cycle"]() is None, "the request's cycle outlived its response's close"


def test_without_the_middleware_the_same_cycle_outlives_the_request():
    seen: dict = {}
    application = application_leaving(1000, seen)
    gc.disable()
    gc.collect()

    serve(application)

    assert seen["cycle"]() is not None


def collections_of_requests(middleware, requests: int) -> list[tuple[str, int]]:
    """(when, generation) of each collection while serving: in a request or after it."""
    collections: list[tuple[str, int]] = []

    def callback(phase, info):
        if phase == "start":
            collections.append(("in" if middleware.in_request else "after", info["generation"]))

    gc.enable()
    gc.collect()
    gc.callbacks.append(callback)
    try:
        for _ in range(requests):
            serve(middleware)
    finally:
        gc.callbacks.remove(callback)
    return collections


def search_like_application():
    """Has ~3,000 objects alive at its peak, as a search has ~2,000, and leaves a cycle of
    800 behind."""
    seen: dict = {}

    def application(environ, start_response):
        middleware.in_request = True
        alive = [[] for _ in range(3000)]
        response = application_leaving(800, seen)(environ, start_response)
        del alive
        middleware.in_request = False
        return response

    middleware = CollectBetweenRequests(application)
    middleware.in_request = False
    return middleware


def test_an_ordinary_request_is_not_paused_by_a_collection():
    middleware = search_like_application()
    assert gc.get_threshold()[0] == AUTOMATIC_YOUNG_THRESHOLD

    collections = collections_of_requests(middleware, 5)

    assert len(collections) == 5, collections
    assert all(when == "after" for when, _ in collections), collections


def test_with_pythons_own_threshold_the_same_requests_are_paused():
    middleware = search_like_application()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)

    collections = collections_of_requests(middleware, 5)

    assert [when for when, _ in collections].count("in") >= 5, collections


def test_a_file_wrapper_is_passed_to_the_server_as_it_is():
    class FileWrapper:
        def __init__(self, file, block_size=8192):
            self.file = file

    wrapped = FileWrapper(object())
    middleware = CollectBetweenRequests(lambda environ, start_response: wrapped)

    assert middleware({"wsgi.file_wrapper": FileWrapper}, lambda *_: None) is wrapped


@pytest.mark.parametrize(
    ("setting", "outermost", "threshold"),
    [
        ("true", "CollectBetweenRequests", AUTOMATIC_YOUNG_THRESHOLD),
        ("false", "CloseWhenBodyUnread", 700),
    ],
)
def test_the_served_application_collects_between_requests_unless_turned_off(
    tmp_path, setting, outermost, threshold
):
    """config.wsgi as gunicorn and runserver load it, in a process of its own."""
    environment = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        "SECRET_KEY": "test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'wsgi.sqlite3'}",
        "GC_BETWEEN_REQUESTS": setting,
        "LOG_LEVEL": "WARNING",
    }
    program = (
        "import gc, config.wsgi as served; "
        "print('served:', type(served.application).__name__, gc.get_threshold()[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    served = next(line for line in done.stdout.splitlines() if line.startswith("served:"))
    assert served == f"served: {outermost} {threshold}"
