"""What a timed phase cost the machine's processors, so that a throughput figure comes with
the ceiling this machine puts on it.

The machine's busy time comes from /proc/stat (every process: the web workers, PostgreSQL,
the benchmark's client processes, whatever else runs); the web workers' and PostgreSQL's
own shares from /proc/<pid>/stat. Divided by the searches or memories of the phase, it says
how many milliseconds of one core each cost, and so how many per second all cores could
serve were they doing nothing else: a target above that ceiling is out of reach on this
machine whatever the latency of one request."""

import os
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds the machine's processors have spent busy since boot, all cores summed.
    Time stolen by the hypervisor and time idle or waiting on I/O are not counted."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    user, nice, system, _idle, _iowait, irq, softirq = map(int, fields[1:8])
    return (user + nice + system + irq + softirq) / TICKS_PER_SECOND


def process_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) a live process has used; None once it is gone."""
    try:
        return cpu_seconds_of_stat(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None


def cpu_seconds_of_stat(stat: str) -> float:
    """utime + stime (fields 14 and 15 of /proc/<pid>/stat), in seconds."""
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


def children_of(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def postmaster_pid(data_dir: Path) -> int | None:
    """The PostgreSQL server's main process, from its data directory's postmaster.pid."""
    try:
        return int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class Snapshot:
    machine: float
    processes: dict[str, dict[int, float]]  # group -> {pid: CPU seconds}


class CpuMeter:
    """Snapshots of the machine's busy time and of named groups of processes (each group a
    function returning its current pids), and their difference as CPU per unit of work."""

    def __init__(self, groups: dict) -> None:
        self.groups = groups

    def snapshot(self) -> Snapshot:
        processes = {}
        for name, pids in self.groups.items():
            seconds = {pid: process_seconds(pid) for pid in pids()}
            processes[name] = {pid: s for pid, s in seconds.items() if s is not None}
        return Snapshot(machine_busy_seconds(), processes)

    @staticmethod
    def per_unit(before: Snapshot, after: Snapshot, units: int) -> dict:
        """ms of one core per unit between two snapshots: the machine's, each group's (a
        process started in between counts from zero; one gone by the end is lost, so groups
        are meant to be long-lived processes) and the rest; and the units per second every
        core of this machine could do at that cost."""
        if units <= 0:
            raise ValueError("no work was done between the snapshots")
        machine = after.machine - before.machine
        out = {"units": units, "cores": os.cpu_count(), "machine_ms": machine / units * 1000}
        grouped = 0.0
        for name, now in after.processes.items():
            earlier = before.processes.get(name, {})
            used = sum(seconds - earlier.get(pid, 0.0) for pid, seconds in now.items())
            grouped += used
            out[f"{name}_ms"] = used / units * 1000
        out["rest_ms"] = max(machine - grouped, 0.0) / units * 1000
        out["ceiling_per_s"] = out["cores"] * 1000 / out["machine_ms"] if machine > 0 else None
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}


def service_meter(worker_pids, pg_data_dir: Path | None) -> CpuMeter:
    """The web workers (a function: gunicorn may replace one) and, on PostgreSQL, the
    server's processes (its backends stay open between requests: CONN_MAX_AGE)."""
    groups = {"workers": worker_pids}
    if pg_data_dir is not None:

        def postgresql() -> list[int]:
            main = postmaster_pid(pg_data_dir)
            return [] if main is None else [main, *children_of(main)]

        groups["postgresql"] = postgresql
    return CpuMeter(groups)


def cpu_table(rows: list[tuple[str, str, str, dict]]) -> list[str]:
    """The table of (database, phase, unit, per_unit()) rows, for docs/benchmarks.md; empty
    when no row was measured (results from before this meter)."""
    rows = [row for row in rows if row[3]]
    if not rows:
        return []
    lines = [
        "What each phase cost the machine's processors (bench/cpu.py: busy time of every "
        "core, /proc/stat, from the clients' start to their last answer, the clients "
        "included), in ms of one core per unit of work, and the rate every core of the "
        "machine could serve at that cost, doing nothing else:",
        "",
        "| database | phase | per | machine | web workers | PostgreSQL | clients and the rest "
        "| all cores' ceiling |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for database, phase, unit, cpu in rows:
        postgresql = f"{cpu['postgresql_ms']:.1f}" if "postgresql_ms" in cpu else "–"
        ceiling = cpu.get("ceiling_per_s")
        lines.append(
            f"| {database} | {phase} | {unit} | {cpu['machine_ms']:.1f} ms | "
            f"{cpu['workers_ms']:.1f} | {postgresql} | {cpu['rest_ms']:.1f} | "
            + (f"{ceiling:.0f}/s on {cpu['cores']} cores |" if ceiling else "– |")
        )
    return lines
