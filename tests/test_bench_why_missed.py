"""Why a benchmark target is missed, as the tables say it: bench/cpu.py (what a phase cost
the machine's processors, and the ceiling that puts on a throughput target), a create's and a
search's stages (bench/served_tables.py) and a band's second pass (bench/tenants_tables.py)."""

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.cpu import (
    TICKS_PER_SECOND,
    CpuMeter,
    Snapshot,
    cpu_seconds_of_stat,
    machine_busy_seconds,
    postmaster_pid,
    process_seconds,
    service_meter,
)
from bench.served_client import concurrent_batches, concurrent_searches, post_batches
from bench.served_tables import markdown, why_missed
from bench.tenants_tables import why_missed as tenants_why_missed

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results"
SERVED_RESULTS = RESULTS / "served.json"
TENANTS_RESULTS = RESULTS / "tenants-42fb784.json"


def _spin(seconds: float) -> None:
    """Keep this process's core busy for `seconds` of its own CPU time."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_the_command_name_may_hold_spaces_and_parentheses():
    fields = ["S", *["0"] * 10, str(3 * TICKS_PER_SECOND), str(TICKS_PER_SECOND), "0", "0"]
    stat = "4242 (odd) name (x)) " + " ".join(fields)

    assert cpu_seconds_of_stat(stat) == 4.0


def test_busy_time_is_counted_for_the_machine_and_the_process():
    machine, own = machine_busy_seconds(), process_seconds(os.getpid())
    _spin(0.3)

    # Ticks are 10 ms; other processes only add to the machine's count.
    assert machine_busy_seconds() - machine >= 0.25
    assert 0.25 <= process_seconds(os.getpid()) - own < 1.0


def test_a_process_that_has_ended_has_no_cpu_time():
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()

    assert process_seconds(finished.pid) is None


def test_per_unit_divides_each_groups_time_by_the_work_done():
    before = Snapshot(machine=100.0, processes={"workers": {1: 10.0, 2: 5.0}, "postgresql": {}})
    # Worker 2 was replaced by worker 3 (its time since the first snapshot is lost); a new
    # PostgreSQL backend counts from zero.
    after = Snapshot(
        machine=104.0, processes={"workers": {1: 12.0, 3: 0.5}, "postgresql": {9: 1.0}}
    )

    used = CpuMeter.per_unit(before, after, 200)

    assert used["machine_ms"] == 20.0
    assert used["workers_ms"] == 12.5
    assert used["postgresql_ms"] == 5.0
    assert used["rest_ms"] == 2.5
    assert used["ceiling_per_s"] == pytest.approx(os.cpu_count() * 1000 / 20.0, abs=0.01)


def test_per_unit_refuses_a_phase_without_work():
    snapshot = Snapshot(machine=1.0, processes={})

    with pytest.raises(ValueError, match="no work"):
        CpuMeter.per_unit(snapshot, snapshot, 0)


def test_a_meter_over_a_live_process_sees_its_work(tmp_path):
    (tmp_path / "postmaster.pid").write_text(f"{os.getpid()}\n{tmp_path}\n")
    assert postmaster_pid(tmp_path) == os.getpid()
    meter = service_meter(lambda: [os.getpid()], tmp_path)

    before = meter.snapshot()
    _spin(0.3)
    used = meter.per_unit(before, meter.snapshot(), 3)

    # This process is both groups here: each saw its ~100 ms per unit.
    assert 80 <= used["workers_ms"] < 400
    assert 80 <= used["postgresql_ms"] < 400
    assert used["machine_ms"] >= 80


def test_no_postgresql_group_without_a_data_directory():
    meter = service_meter(lambda: [os.getpid()], None)

    assert set(meter.snapshot().processes) == {"workers"}
    assert postmaster_pid(Path("/nonexistent")) is None


def _results_with(cpu_ms: float, rate: float) -> dict:
    results = json.loads(SERVED_RESULTS.read_text())
    run = results["served"]["postgresql"]
    run["concurrent"]["searches_per_s"] = rate
    run["concurrent"]["cpu"] = {
        "units": 1000,
        "cores": 2,
        "machine_ms": cpu_ms,
        "workers_ms": cpu_ms * 0.6,
        "postgresql_ms": cpu_ms * 0.2,
        "rest_ms": cpu_ms * 0.2,
        "ceiling_per_s": 2000 / cpu_ms,
    }
    return results


def test_a_missed_throughput_target_is_explained_by_its_cpu_ceiling():
    results = _results_with(cpu_ms=21.5, rate=90.0)
    why = "\n".join(why_missed(results["served"]))

    assert "postgresql, 8 clients: 90/s" in why
    assert "21.5 ms of one core" in why
    assert "2 cores allow 93/s at that cost, below the target of 100/s" in why
    table = markdown(results)
    assert (
        "| postgresql | 8 clients searching | search | 21.5 ms | 12.9 | 4.3 | 4.3 "
        "| 93/s on 2 cores |" in table
    )


def test_a_machine_with_cores_to_spare_is_said_to_be_waiting():
    why = "\n".join(why_missed(_results_with(cpu_ms=10.0, rate=90.0)["served"]))

    assert "allow 200/s at that cost, not below the target of 100/s: the cores were 45% busy" in why


def test_a_met_target_needs_no_explanation():
    why = "\n".join(why_missed(_results_with(cpu_ms=10.0, rate=150.0)["served"]))

    assert "8 clients" not in why


def test_a_slow_create_is_explained_by_its_stages():
    results = json.loads(SERVED_RESULTS.read_text())
    create = results["served"]["postgresql"]["create"]
    create.update(
        p50_ms=38.9,
        app_ms_mean=33.0,
        embedding_ms_mean=6.0,
        similar_ms_mean=5.0,
        write_ms_mean=21.0,
    )
    why = "\n".join(why_missed(results["served"]))

    assert "postgresql, single POST /api/memories p50 38.9 ms (target 25)" in why
    assert "6.0 ms embedding the text, 5.0 ms looking for near duplicates" in why
    assert "21.0 ms writing (on PostgreSQL the write holds the insert" in why

    create["p50_ms"] = 20.0
    assert "single POST" not in "\n".join(why_missed(results["served"]))


def test_a_missed_band_is_explained_by_its_stages_and_its_second_pass():
    results = json.loads(TENANTS_RESULTS.read_text())
    medium = results["tenants"]["postgresql"]["search"]["medium"]
    medium.update(p95_ms=31.4, mean_ms=25.0)
    medium["again"]["p95_ms"] = 24.7
    medium["blocks_per_search"] = {"read": 25.4, "hit": 1953}
    why = "\n".join(tenants_why_missed(results))

    assert "postgresql, medium users: p95 31.4 ms (target 30)" in why
    assert "The same searches made again right after: p95 24.7 ms" in why
    assert "read 25.4 blocks from outside shared_buffers (and found 1953 in them)" in why
    assert "sqlite" not in why  # no per-band target on SQLite

    medium["p95_ms"] = 29.0
    assert "medium users" not in "\n".join(tenants_why_missed(results))


class _Service(BaseHTTPRequestHandler):
    """Answers the load client's searches (200) and batches (201) on keep-alive."""

    protocol_version = "HTTP/1.1"

    def _answer(self, status: int) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        _spin(0.002)  # some work for the meter to see
        body = b"{}"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Server-Timing", "embedding;dur=1.0, write;dur=2.0, app;dur=3.5")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._answer(200)

    def do_POST(self):
        self._answer(201)

    def log_message(self, *args):
        pass


@pytest.fixture
def service_port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_load_phases_meter_the_window_they_time(service_port):
    meter = service_meter(lambda: [os.getpid()], None)

    searched = concurrent_searches(service_port, {}, ["q"], 2, 0.5, meter=meter)
    items = [(f"k{i}", "v") for i in range(8)]
    posted = post_batches(service_port, {}, items, 4, 2, meter=meter)
    together = concurrent_batches(service_port, {}, items, 2, 4, 2, meter=meter)

    assert searched["cpu"]["units"] == searched["searches"] > 0
    assert searched["cpu"]["workers_ms"] > 0  # this process answered every search
    assert posted["cpu"]["units"] == posted["memories"] == 8
    assert together["cpu"]["units"] == together["memories"] == 8
    assert "cpu" not in concurrent_searches(service_port, {}, ["q"], 1, 0.2)
