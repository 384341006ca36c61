"""The runner that `python -m bench served` (bench/served.py) and `python -m bench served
--tenants` (bench/tenants.py) share: the results' meta block, the benchmark's own PostgreSQL
server, a database per run (a throwaway SQLite file or a fresh database on that server), the
set-up process that loads it (`python -m <module> setup`), gunicorn as the README deploys it
with the timer process beside it (bench/served_server.py), the machine's state around the
timings, the clean-up, and the results file with its tables.

Each benchmark keeps what differs: its plan, the roles its set-up and timer processes play
(bench/served_roles.py, bench/tenants_roles.py), what it times, and its tables."""

import argparse
import contextlib
import datetime as dt
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.common import (
    ROOT,
    embedder_description,
    gc_between_requests,
    git_commit,
    machine,
    results_write,
    settle,
    synthetic_noise_calibration,
)
from bench.cpu import CpuMeter, service_meter
from bench.pg import DATA_DIR
from bench.served_server import Server, Timer

GUNICORN_CONFIG = "config/gunicorn.conf.py"


def add_service_options(parser: argparse.ArgumentParser) -> None:
    """The options both benchmarks take for the server and the concurrent searches."""
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--seconds", type=float, help="concurrent run length (20; quick 5)")


def service_plan(args: argparse.Namespace) -> dict:
    """The plan's entries of those options (`args.quick` shortens the concurrent run)."""
    return {
        "workers": args.workers,
        "clients": args.clients,
        "seconds": args.seconds or (5.0 if args.quick else 20.0),
    }


def results_meta(argv: list[str], *, quick: bool, **more) -> dict:
    """The "meta" block of a results file: when, how, on what and with which model it ran;
    `more` (a benchmark's plan) after those."""
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "python -m bench served " + shlex.join(argv),
        "machine": machine(),
        "git": git_commit(),
        "quick": quick,
        "embedder": embedder_description(),
        "gc_between_requests": gc_between_requests(),
        "synthetic_noise": synthetic_noise_calibration(),
        **more,
    }


@contextlib.contextmanager
def benchmark_postgres(needed: bool) -> Iterator:
    """The benchmark's PostgreSQL server (bench/pg.py, var/bench-pg) when a run needs one,
    stopped at the end; None when none does."""
    if not needed:
        yield None
        return
    from bench.pg import BenchPostgres

    pg = BenchPostgres()
    try:
        yield pg
    finally:
        pg.stop()


def new_database(database: str, pg, label: str, where: Path) -> tuple[str | None, str]:
    """A fresh database: (the PostgreSQL database's name, to drop, or None; its URL). SQLite:
    the file <label>.sqlite3 in `where`; PostgreSQL: a new database on the benchmark's server."""
    if database == "sqlite":
        return None, f"sqlite:///{where.resolve() / f'{label}.sqlite3'}"
    return pg.create_database(label)


def run_setup(module: str, url: str, where: Path, *options: str) -> dict:
    """`python -m <module> setup --database-url URL <options> --out <where>/setup.json` (the
    benchmark's set-up role: migrate, load, make the API key), and what it wrote there."""
    out = where / "setup.json"
    command = [sys.executable, "-m", module, "setup", "--database-url", url, *options]
    command += ["--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True)
    return json.loads(out.read_text())


def write_results(name: str, results: dict, markdown: Callable[[dict], str], *, docs: bool):
    """bench/results/<name>.json, its tables on stdout, and (when `docs`) docs/benchmarks.md
    rendered again from the newest results."""
    results_write(name, results)
    print(markdown(results))
    if docs:
        from bench.report import write_docs

        write_docs()


class ServedRun:
    """One database's run, as a context manager: a temporary directory (`tmp`), the database
    it makes there or on the benchmark's server (`create_database`), the set-up
    (`setup`), gunicorn and the timer process (`start`, then `port` and `timer`), and on
    leaving, every one of them stopped, dropped or removed.

    `label` names the directory, the database and its file; `module` is the benchmark's
    module whose `setup` and `timer` roles the processes run (`python -m <module> ...`)."""

    def __init__(self, database: str, pg, *, label: str, module: str) -> None:
        self.database = database
        self.pg = pg
        self.label = label
        self.module = module
        self.tmp = Path(tempfile.mkdtemp(prefix=f"memory-{label}-"))
        self.db_name: str | None = None
        self._server: Server | None = None
        self._timer: Timer | None = None
        self.load_before: tuple[float, float, float] | None = None

    def __enter__(self) -> "ServedRun":
        return self

    def __exit__(self, *_exc) -> None:
        if self._timer is not None:
            self._timer.stop()
        if self._server is not None:
            self._server.stop()
        if self.db_name:
            self.pg.drop_database(self.db_name)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def create_database(self) -> str:
        """A fresh database for this run (dropped on leaving); its URL."""
        self.db_name, url = new_database(self.database, self.pg, self.label, self.tmp)
        return url

    def setup(self, url: str, *options: str) -> dict:
        return run_setup(self.module, url, self.tmp, *options)

    def start(self, url: str, queries: list[str], *, workers: int, headers: dict) -> dict:
        """Once the machine has settled: gunicorn, timed until it answered `headers`' request,
        then the timer process with `queries`. The results' lines on the server."""
        (self.tmp / "queries.json").write_text(json.dumps(queries))
        settle()
        self.load_before = os.getloadavg()
        self._server = Server(url, workers=workers, log=self.tmp / "gunicorn.log")
        first_answer = self._server.start(headers)
        self._timer = Timer(url, self.tmp / "queries.json", module=self.module)
        return {
            "gunicorn": {"workers": workers, "config": GUNICORN_CONFIG},
            "time_to_first_answer_s": round(first_answer, 2),
        }

    @property
    def server(self) -> Server:
        assert self._server is not None, "start() first"
        return self._server

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def timer(self) -> Timer:
        assert self._timer is not None, "start() first"
        return self._timer

    def meter(self) -> CpuMeter:
        """What a phase costs the machine's cores (bench/cpu.py): the web workers and, on the
        benchmark's PostgreSQL, its server's processes."""
        data_dir = DATA_DIR if self.database == "postgresql" else None
        return service_meter(self.server.worker_pids, data_dir)

    def machine_after(self, *, worker_log: bool = False) -> dict:
        """The results' lines at the end: each worker's memory, (`worker_log`) gunicorn's
        lines on booting its workers, and the load average before the server started and
        now."""
        assert self.load_before is not None
        out: dict = {"workers": self.server.worker_memory()}
        if worker_log:
            out["worker_log"] = self.server.ready_lines()
        out["loadavg_before"] = [round(x, 2) for x in self.load_before]
        out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        return out
