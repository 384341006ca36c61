"""The processes `python -m bench served` (bench/served.py) starts beside its client:
gunicorn as the README deploys it, and the timer process that times the bare KNN and the
query embedding in process (bench/served_roles.py)."""

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT

STARTUP_TIMEOUT_SECONDS = 180


class Server:
    """gunicorn as docs/operations.md (Production) runs it, on a free port of 127.0.0.1."""

    def __init__(self, url: str, *, workers: int, log: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.log = log
        self.workers = workers
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DJANGO_SETTINGS_MODULE", "DEBUG", "CELERY_BROKER_URL")
        }
        self.env.update(
            DEBUG="false",
            SECRET_KEY=secrets.token_urlsafe(50),
            DATABASE_URL=url,
            ALLOWED_HOSTS="127.0.0.1,localhost",
            # Each answer's Server-Timing header: where its time went (ops.timing).
            SERVER_TIMING="true",
        )
        self.process: subprocess.Popen | None = None

    def start(self, headers: dict) -> float:
        """Start gunicorn; seconds until it answered an authenticated request."""
        command = [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py"]
        command += ["--workers", str(self.workers), "--bind", f"127.0.0.1:{self.port}"]
        started = time.perf_counter()
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.log.read_text()[-3000:]}")
            if time.perf_counter() - started > STARTUP_TIMEOUT_SECONDS:
                raise RuntimeError(f"gunicorn did not answer:\n{self.log.read_text()[-3000:]}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                connection.request("GET", "/api/memories/count", headers=headers)
                response = connection.getresponse()
                body = response.read()
                connection.close()
            except OSError:
                time.sleep(0.02)
                continue
            if response.status != 200:
                raise RuntimeError(f"/api/memories/count answered {response.status}: {body!r}")
            return time.perf_counter() - started

    def worker_pids(self) -> list[int]:
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [int(child) for child in children]

    def worker_memory(self) -> list[dict]:
        """RSS and PSS (RSS with shared pages split among their sharers) per worker, MB."""
        workers = []
        for pid in self.worker_pids():
            row = {"pid": pid}
            for name, path, field in (
                ("rss_mb", "status", "VmRSS:"),
                ("pss_mb", "smaps_rollup", "Pss:"),
            ):
                try:
                    for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
                        if line.startswith(field):
                            row[name] = round(int(line.split()[1]) / 1024, 1)
                except OSError:
                    pass
            workers.append(row)
        return workers

    def ready_lines(self) -> list[str]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [line for line in lines if "ready in" in line or "Booting worker" in line]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Timer:
    """The timer process: bare KNN and query embedding of one query per call, in process."""

    def __init__(self, url: str, queries: Path, *, module: str = "bench.served") -> None:
        command = [sys.executable, "-m", module, "timer", "--database-url", url]
        command += ["--queries", str(queries)]
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the timer process did not start")

    def time(self, index: int) -> dict:
        self.process.stdin.write(f"{index}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def exactness(self, queries: int) -> dict:
        """Share of the exact nearest RECALL_CANDIDATES that the service's search finds."""
        self.process.stdin.write(f"exact {queries}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def ask(self, request: dict):
        """One JSON request, one JSON answer (the timer of bench/tenants_roles.py)."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)
