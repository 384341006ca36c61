"""HTTP on raw sockets for the tests that send what http.client will not (chunked framing,
broken framing, requests through a front): read an answer's head, wait for a server process
to listen."""

import socket
import subprocess
import time
from pathlib import Path

STARTUP_SECONDS = 120


def read_head(reader) -> tuple[int, dict[str, str]]:
    """The status and the headers (names in lower case) of the answer `reader` (a socket's
    makefile("rb")) is at; the body is left to read."""
    status = int(reader.readline().split()[1])
    headers = {}
    while (line := reader.readline().decode().strip()) != "":
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


def wait_listening(process: subprocess.Popen, port: int, log: Path) -> None:
    """Until 127.0.0.1:`port` takes a connection; fails with the server's log if the process
    ends first or it takes longer than STARTUP_SECONDS."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        assert process.poll() is None, log.read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
