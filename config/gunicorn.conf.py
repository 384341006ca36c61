"""gunicorn for production: `gunicorn -c config/gunicorn.conf.py --workers 4` (docs/operations.md,
Production). Flags on the command line win over these values (--bind, --threads, ...).

- gthread workers: each worker answers with a few threads and keeps idle client connections
  open (keep-alive) without holding a thread for them. Sync workers answer every request
  with `Connection: close`, so a client or proxy pays a new TCP connection per call.
- The model is exported (once per checkout) before workers start, and each worker loads it
  and embeds one text (config/wsgi.py, as it loads the application) before it accepts a
  connection: no first request waits 6-8 s, and /readyz is 200 once gunicorn listens.
- Each thread keeps its own database connection (CONN_MAX_AGE): PostgreSQL must allow
  workers x threads connections per gunicorn, plus Celery's and the MCP server's."""

import gc
import os
import time
from pathlib import Path

wsgi_app = "config.wsgi"
chdir = str(Path(__file__).resolve().parent.parent)
worker_class = "gthread"
# Threads wait on the database and on ONNX Runtime, both of which release the GIL.
threads = 4
# Longer than a reverse proxy keeps idle upstream connections (nginx: 60 s), so the proxy,
# not gunicorn, closes them: otherwise it may send a request on a connection gunicorn is
# closing at that moment and answer 502.
keepalive = 75
# Nothing here uses gunicornc; two gunicorns on one machine (a benchmark beside a dev server)
# would otherwise share its default socket path.
control_socket_disable = True


def pre_request(worker, req):
    """Lets config.unread_body say `Connection: close` when the connection closes because
    the application left the request's body unread."""
    from config.unread_body import remember_request

    remember_request(worker, req)


def on_starting(server):
    """In the master, before any worker: export the ONNX model if this checkout has none
    yet (~15 s, in a child process, so neither the master nor the workers import torch).
    Reading the settings here also stops a misconfigured start before any worker forks."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

    from memories.embeddings.embedders import export_local_model

    export_local_model()


def post_worker_init(worker):
    """In each worker, after config/wsgi.py has loaded (Django set up, the model loaded) and
    before it accepts a connection: import the URLconf (views, DRF, the schema code), which
    Django otherwise does in the first request, then freeze what is loaded."""
    from django.urls import get_resolver

    started = time.perf_counter()
    get_resolver().url_patterns  # noqa: B018 (the property imports every view module)
    # What the worker has loaded by now lives as long as it does. Frozen, a full garbage
    # collection no longer walks it: one that fell in a search took 66 ms unfrozen, 10 ms
    # frozen (in process, 100,000 memories on PostgreSQL).
    gc.collect()
    gc.freeze()
    worker.log.info("worker %s ready in %.1f s", worker.pid, time.perf_counter() - started)


def child_exit(server, worker):
    """In the master, when a worker has exited: with PROMETHEUS_MULTIPROC_DIR, its files stop
    counting towards live gauges (prometheus-client's multiprocess mode asks for this)."""
    from django.conf import settings
    from prometheus_client import multiprocess

    if settings.PROMETHEUS_MULTIPROC_DIR:
        multiprocess.mark_process_dead(worker.pid, path=settings.PROMETHEUS_MULTIPROC_DIR)
