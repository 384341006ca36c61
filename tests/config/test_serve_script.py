"""scripts/serve's DEBUG: the environment wins, then .env, then serve's own default (true).
Both modes' banner: every link on the one address. scripts/serve --production: the settings
checked, the preparation, then nginx in front of gunicorn (or gunicorn alone with
FRONT=none), a Celery worker and beat with an emptied metrics directory
(tests/test_topology.py and tests/test_slow_clients.py run them for real).

The script runs for real in a copy of scripts/ whose .venv/bin/python is a stand-in that
records the DEBUG each manage.py command was started with (Django reads .env itself)."""

import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.topology import free_port

REPO = Path(__file__).resolve().parents[2]
UNSET = "<unset>"

# gunicorn's stand-in answers one request on its --bind address (what serve waits for
# before its banner), or with GUNICORN_FAILS exits at once, as on an address it cannot bind.
ONE_ANSWER = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
host, port = sys.argv[sys.argv.index("--bind") + 1].rsplit(":", 1)
class Answer(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
HTTPServer((host, int(port)), Answer).handle_request()
"""
STAND_IN_PYTHON = f"""#!/usr/bin/env bash
if [ "$1" = scripts/_address.py ]; then exec {sys.executable} "$@"; fi
echo "$2 ${{DEBUG-{UNSET}}}" >> "$(dirname "$0")/../../calls.log"
if [ "$2" = create_first_admin ]; then echo "Staff login: (stand-in)"; fi
if [ "$2" = gunicorn ]; then
  echo "$*" > "$(dirname "$0")/../../gunicorn-arguments.log"
  if [ -n "${{GUNICORN_FAILS:-}}" ]; then echo "gunicorn: cannot bind" >&2; exit 3; fi
  exec {sys.executable} -c '{ONE_ANSWER}' "$@"
fi
"""


@pytest.fixture
def checkout(tmp_path) -> Path:
    (tmp_path / "scripts").mkdir()
    for name in ("serve", "_install.sh", "_address.py"):
        shutil.copy2(REPO / "scripts" / name, tmp_path / "scripts" / name)
    (tmp_path / "config").mkdir()
    shutil.copy2(REPO / "config" / "nginx.conf", tmp_path / "config" / "nginx.conf")
    (tmp_path / "requirements.txt").write_text("Django\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STAND_IN_PYTHON)
    python.chmod(0o755)
    # What _install.sh writes after installing: nothing to install.
    digest = hashlib.sha256((tmp_path / "requirements.txt").read_bytes()).hexdigest()
    (tmp_path / ".venv" / ".installed-requirements.txt").write_text(digest + "\n")
    return tmp_path


def serve(checkout: Path, dotenv: str | None = None, **variables: str) -> dict[str, str]:
    """Run scripts/serve; the DEBUG each manage.py command saw, by command."""
    if dotenv is not None:
        (checkout / ".env").write_text(dotenv)
    done = run_serve(checkout, **variables)
    assert done.returncode == 0, done.stderr
    return dict(line.split(" ", 1) for line in calls_of(checkout))


def run_serve(checkout: Path, **variables: str) -> subprocess.CompletedProcess:
    """scripts/serve (the embedded default) on a free port unless PORT is given."""
    environment = {key: value for key, value in os.environ.items() if key != "DEBUG"}
    environment.update(HOST="127.0.0.1", PORT=str(free_port()))
    environment.update(variables)
    return subprocess.run(
        [str(checkout / "scripts" / "serve")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_debug_anywhere_serve_turns_it_on(checkout):
    seen = serve(checkout)

    assert seen == {"migrate": "true", "create_first_admin": "true", "gunicorn": "true"}


def test_the_embedded_default_is_one_gunicorn_process_on_the_address(checkout):
    port = free_port()
    done = run_serve(checkout, PORT=str(port))

    assert done.returncode == 0, done.stderr
    assert (checkout / "gunicorn-arguments.log").read_text().strip() == (
        f"-m gunicorn -c config/gunicorn.conf.py --bind 127.0.0.1:{port} --workers 1"
    )


def test_a_taken_port_stops_serve_before_anything_runs_and_without_a_banner(checkout):
    with socket.socket() as other_server:
        other_server.bind(("127.0.0.1", 0))
        other_server.listen()
        port = other_server.getsockname()[1]

        done = run_serve(checkout, PORT=str(port))

    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"scripts/serve: 127.0.0.1:{port} is taken: another process listens there (an earlier "
        "./scripts/serve still running?). Stop it, or set PORT (or HOST) to serve elsewhere."
    )
    assert done.stdout == ""
    assert calls_of(checkout) == []


def test_a_port_that_is_not_a_number_stops_serve(checkout):
    done = run_serve(checkout, PORT="http")

    assert done.returncode == 1
    assert "PORT=http: expected a port number" in done.stderr
    assert calls_of(checkout) == []


def test_gunicorn_stopping_before_it_answers_is_an_error_without_a_banner(checkout):
    port = free_port()
    done = run_serve(checkout, PORT=str(port), GUNICORN_FAILS="1")

    assert done.returncode == 3  # gunicorn's
    assert "Serving on" not in done.stdout
    assert "Staff login" not in done.stdout
    assert done.stderr.strip().splitlines()[-1] == (
        f"scripts/serve: gunicorn stopped (status 3) before it answered on "
        f"http://127.0.0.1:{port}/: its log is above."
    )


def test_debug_false_in_dotenv_is_left_for_django_to_read(checkout):
    seen = serve(checkout, dotenv="SECRET_KEY=abc\nDEBUG=false\n")

    assert set(seen.values()) == {UNSET}


def test_debug_in_an_exported_dotenv_line_counts_too(checkout):
    seen = serve(checkout, dotenv="export DEBUG=off\n")

    assert set(seen.values()) == {UNSET}


def test_an_empty_or_commented_debug_in_dotenv_does_not_count(checkout):
    seen = serve(checkout, dotenv="DEBUG=\n# DEBUG=false\n  DEBUG=false\n")

    assert set(seen.values()) == {"true"}


def test_debug_from_the_environment_wins_over_dotenv(checkout):
    seen = serve(checkout, dotenv="DEBUG=true\n", DEBUG="false")

    assert set(seen.values()) == {"false"}


# --- --production --------------------------------------------------------------------------------

# The settings check (manage.py shell) runs for real, on this repository's settings; every
# other command is recorded with the variables the processes would see.
PRODUCTION_STAND_IN = f"""#!/usr/bin/env bash
if [ "$1 $2" = "manage.py shell" ]; then cd {REPO} && exec {sys.executable} "$@"; fi
if [ "$1" = scripts/_address.py ]; then exec {sys.executable} "$@"; fi
seen="${{DEBUG-{UNSET}}} ${{PROMETHEUS_MULTIPROC_DIR-{UNSET}}}"
echo "$* | $seen" >> "$(dirname "$0")/../../calls.log"
if [ "$2" = gunicorn ]; then
  echo "${{TRUSTED_PROXY_COUNT-{UNSET}}}" > "$(dirname "$0")/../../trusted-proxies.log"
  # Binds its unix socket, which serve waits for before it starts nginx.
  for arg in "$@"; do case "$arg" in unix:*)
    {sys.executable} -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
      "${{arg#unix:}}" ;;
  esac; done
fi
# gunicorn and Celery run on until the first of them stops, which stops the others.
if [ "$1" = -m ]; then sleep 1; fi
"""
PRODUCTION = {
    "DATABASE_URL": "postgres://memory:secret@127.0.0.1:1/memory",  # never connected to
    "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
    "SECRET_KEY": "test-only-secret-key",
}
# The port of a test that names none: free, as serve checks before anything runs (8000 may
# serve something else here).
PRODUCTION_PORT = str(free_port())


# nginx's stand-in, first on the PATH: records its arguments; run (not -t), answers one
# request on HOST:PORT (the banner's check), or gives up after 10 s, then stops.
NGINX_STAND_IN = f"""#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../nginx.log"
if [ "${{*: -1}}" != -q ]; then
  exec {sys.executable} -c '
import os
from http.server import BaseHTTPRequestHandler, HTTPServer
class Answer(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
server = HTTPServer((os.environ["HOST"], int(os.environ["PORT"])), Answer)
server.timeout = 10
server.handle_request()
'
fi
"""


def serve_production(checkout: Path, **variables: str) -> subprocess.CompletedProcess:
    (checkout / ".venv" / "bin" / "python").write_text(PRODUCTION_STAND_IN)
    nginx = checkout / "bin" / "nginx"
    nginx.parent.mkdir(exist_ok=True)
    nginx.write_text(NGINX_STAND_IN)
    nginx.chmod(0o755)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DEBUG", "DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR")
        and key not in ("TRUSTED_PROXY_COUNT", "SECURE_PROXY_SSL_HEADER", "FRONT")
        and not key.startswith(("DATABASE_", "CELERY_"))
    }
    environment["PATH"] = f"{nginx.parent}:{environment['PATH']}"
    environment.update(HOST="127.0.0.1", PORT=PRODUCTION_PORT)
    environment.update(variables)
    return subprocess.run(
        [str(checkout / "scripts" / "serve"), "--production"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def calls_of(checkout: Path) -> list[str]:
    log = checkout / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_production_prepares_then_runs_nginx_gunicorn_two_workers_and_beat_with_emptied_metrics(
    checkout,
):
    stale = checkout / "var" / "metrics" / "counter_123.db"
    stale.parent.mkdir(parents=True)
    stale.write_text("figures of a process that ran before")

    done = serve_production(checkout, **PRODUCTION)

    assert done.returncode == 0, done.stderr
    metrics = checkout / "var" / "metrics"
    seen = f" | {UNSET} {metrics}"
    calls = calls_of(checkout)
    assert calls[:3] == [
        f"manage.py migrate --noinput{seen}",
        f"manage.py collectstatic --noinput{seen}",
        f"manage.py export_embedder{seen}",
    ]
    front = checkout / "var" / "nginx" / PRODUCTION_PORT
    assert sorted(calls[3:]) == [
        f"-m celery -A config beat{seen}",
        f"-m celery -A config worker -Q celery -n tasks@%h --concurrency 2{seen}",
        f"-m celery -A config worker -Q webhooks -n webhooks@%h --pool threads "
        f"--concurrency 4{seen}",
        f"-m gunicorn -c config/gunicorn.conf.py --bind unix:{front}/gunicorn.sock "
        f"--workers 2{seen}",
    ]
    assert metrics.is_dir() and list(metrics.iterdir()) == []
    # nginx checks its config before anything runs, then runs in the foreground; as root,
    # its workers run as root too (nobody may not reach the socket).
    user = " user root;" if os.geteuid() == 0 else ""
    nginx = f"-c {front}/nginx.conf -e stderr -g daemon off;{user}"
    assert (checkout / "nginx.log").read_text().splitlines() == [f"{nginx} -t -q", nginx]
    # Django counts the front among the proxies in front of it.
    assert (checkout / "trusted-proxies.log").read_text().strip() == "1"


def test_the_front_is_written_with_the_address_the_socket_and_djangos_limits(checkout):
    done = serve_production(
        checkout,
        **PRODUCTION,
        PORT="9000",
        MAX_REQUEST_BYTES="2048",
        IMPORT_MAX_BYTES="4096",
        TRUSTED_PROXY_COUNT="2",
    )

    assert done.returncode == 0, done.stderr
    front = checkout / "var" / "nginx" / "9000"
    config = (front / "nginx.conf").read_text()
    assert re.findall(r"@[A-Z_]+@", config) == []
    assert "listen 127.0.0.1:9000;" in config
    assert f"server unix:{front}/gunicorn.sock;" in config
    assert f"pid {front}/nginx.pid;" in config
    assert f"client_body_temp_path {front}/client_body;" in config
    # Django's body limit, and the import's in its own location.
    assert config.count("client_max_body_size 2048;") == 1
    import_location = config[config.index("location = /api/memories/import") :]
    assert "client_max_body_size 4096;" in import_location.split("}")[0]
    # No proxy in front (SECURE_PROXY_SSL_HEADER unset): the scheme is the connection's and
    # the client's own scheme headers are dropped.
    assert "default $scheme;" in config
    assert 'proxy_set_header X-Forwarded-Ssl "";' in config
    assert (checkout / "trusted-proxies.log").read_text().strip() == "3"


def real_nginx() -> str:
    """The nginx scripts/test installs; outside CI a test without it is skipped."""
    nginx = shutil.which("nginx", path=f"{os.environ['PATH']}:/usr/sbin")
    if nginx is None:
        if os.environ.get("CI"):
            pytest.fail("nginx is not installed: scripts/test installs it")
        pytest.skip("nginx is not installed (scripts/test installs it)")
    return nginx


def test_the_front_answers_the_apis_json_errors_while_gunicorn_is_down(checkout):
    port = free_port()
    done = serve_production(checkout, **PRODUCTION, PORT=str(port))
    assert done.returncode == 0, done.stderr
    config = checkout / "var" / "nginx" / str(port) / "nginx.conf"
    # The real nginx on the config serve wrote; gunicorn's socket is not there.
    nginx = subprocess.Popen(
        [real_nginx(), "-c", str(config), "-e", "stderr", "-g", "daemon off;"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/healthz")
                break
            except ConnectionRefusedError:
                assert nginx.poll() is None, nginx.stderr.read()
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.1)
        response = connection.getresponse()
        assert response.status == 502
        assert response.getheader("Content-Type") == "application/json"
        assert json.loads(response.read())["code"] == "unavailable"
        connection.close()

        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("POST", "/api/memories", body=b"x" * 1_048_577)
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["code"] == "request_too_large"
        connection.close()
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


def test_the_front_passes_the_outer_proxys_scheme_when_there_is_one(checkout):
    done = serve_production(
        checkout, **PRODUCTION, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto,https"
    )

    assert done.returncode == 0, done.stderr
    config = (checkout / "var" / "nginx" / PRODUCTION_PORT / "nginx.conf").read_text()
    assert "default $http_x_forwarded_proto;" in config
    assert "proxy_set_header X-Forwarded-Ssl $http_x_forwarded_ssl;" in config


def test_an_unknown_front_stops_before_anything_runs(checkout):
    done = serve_production(checkout, **PRODUCTION, FRONT="apache")

    assert done.returncode == 2
    assert done.stderr.strip() == "FRONT=apache: expected nginx (the default) or none"
    assert calls_of(checkout) == []


def test_production_keeps_the_metrics_directory_and_sizes_the_settings_give(checkout, tmp_path):
    metrics = tmp_path / "shared-metrics"

    done = serve_production(
        checkout,
        **PRODUCTION,
        PROMETHEUS_MULTIPROC_DIR=str(metrics),
        WEB_CONCURRENCY="4",
        WORKER_CONCURRENCY="3",
        WEBHOOK_CONCURRENCY="6",
        WEBHOOK_QUEUE="deliveries",
        PORT="9000",
        FRONT="none",  # gunicorn alone, on the address
    )

    assert done.returncode == 0, done.stderr
    assert not (checkout / "nginx.log").exists()
    assert (checkout / "trusted-proxies.log").read_text().strip() == UNSET
    calls = calls_of(checkout)
    seen = f" | {UNSET} {metrics}"
    assert f"-m celery -A config worker -Q celery -n tasks@%h --concurrency 3{seen}" in calls
    assert (
        f"-m celery -A config worker -Q deliveries -n webhooks@%h --pool threads "
        f"--concurrency 6{seen}" in calls
    )
    assert (
        f"-m gunicorn -c config/gunicorn.conf.py --bind 127.0.0.1:9000 --workers 4 | {UNSET} "
        f"{metrics}" in calls
    )


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"DATABASE_URL": "sqlite:////tmp/memory.sqlite3"},
            "--production runs on PostgreSQL: set DATABASE_URL=postgres://...",
        ),
        (
            {"CELERY_BROKER_URL": ""},
            "--production runs Celery on Redis: set CELERY_BROKER_URL=redis://...",
        ),
    ],
)
def test_production_without_postgresql_or_a_broker_stops_before_anything_runs(
    checkout, variables, message
):
    done = serve_production(checkout, **(PRODUCTION | variables))

    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == message
    assert calls_of(checkout) == []


# --- the banner ----------------------------------------------------------------------------------

LINKS = [
    "  API root      http://127.0.0.1:{port}/api/",
    "  API docs      http://127.0.0.1:{port}/api/docs/",
    "  schema        http://127.0.0.1:{port}/api/schema/",
    "  review pages  http://127.0.0.1:{port}/review/",
    "  admin         http://127.0.0.1:{port}/admin/",
    "  MCP           http://127.0.0.1:{port}/mcp",
]


def test_serve_prints_every_link_on_its_one_address_and_the_login_once_it_answers(checkout):
    done = run_serve(checkout, PORT="9100")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # Only after gunicorn answered: the banner, the links, then the staff login.
    assert "no broker" in lines[-len(LINKS) - 2]
    assert lines[-len(LINKS) - 1 : -1] == [line.format(port=9100) for line in LINKS]
    assert lines[-1] == "Staff login: (stand-in)"
    assert lines.count("Staff login: (stand-in)") == 1


def test_production_stops_before_anything_runs_when_its_address_is_taken(checkout):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        done = serve_production(checkout, **PRODUCTION, PORT=str(port))

    assert done.returncode == 1
    assert f"127.0.0.1:{port} is taken" in done.stderr
    assert "Serving on" not in done.stdout
    assert [call for call in calls_of(checkout) if "manage.py shell" not in call] == []


def test_production_prints_no_banner_while_nothing_answers_on_the_address(checkout):
    # gunicorn's stand-in binds no address (FRONT=none: it alone would listen there).
    done = serve_production(checkout, **PRODUCTION, PORT="9102", FRONT="none")

    assert done.returncode == 0, done.stderr
    assert "Serving on" not in done.stdout
    assert any("-m gunicorn" in call for call in calls_of(checkout))


def test_production_prints_the_same_links(checkout):
    done = serve_production(checkout, **PRODUCTION, PORT="9101")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("  API root      http://127.0.0.1:9101/api/")
    assert lines[start : start + len(LINKS)] == [line.format(port=9101) for line in LINKS]
    assert "nginx, gunicorn" in lines[start - 1]
