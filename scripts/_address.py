"""scripts/serve's address, before and after the server starts (the standard library only:
it runs before Django or gunicorn is imported).

  python scripts/_address.py free HOST PORT
      exit 0 when a server may listen on HOST:PORT (bound as gunicorn binds it, with
      SO_REUSEADDR); else say why on stderr and exit 1: another process there, a port this
      user may not take, an address that is not this machine's.
  python scripts/_address.py answering HOST PORT PID
      wait until an HTTP request to HOST:PORT is answered (exit 0) or process PID has ended
      (exit 1): the banner is printed once the server answers, not when it was started."""

import errno
import http.client
import os
import socket
import sys
import time

# The first start exports the model before gunicorn listens (~15 s), and its worker loads
# it before it answers: a request sent meanwhile waits in the listen queue.
ANSWER_TIMEOUT_SECONDS = 120
RETRY_SECONDS = 0.1


def family_of(host: str) -> socket.AddressFamily:
    """As gunicorn chooses: IPv6 for an address with a colon, else IPv4 (names included)."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def free(host: str, port: int) -> str | None:
    """None when HOST:PORT may be bound; else what stops it, for the user."""
    with socket.socket(family_of(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return (
                    f"{host}:{port} is taken: another process listens there (an earlier "
                    "./scripts/serve still running?). Stop it, or set PORT (or HOST) to "
                    "serve elsewhere."
                )
            if error.errno == errno.EACCES:
                return (
                    f"this user may not listen on port {port} ({error.strerror}): set PORT "
                    "to a port above 1023, or run as a user who may."
                )
            reason = error.strerror or str(error)
            return f"cannot listen on {host}:{port} ({reason}): check HOST and PORT."
    return None


def connect_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to `host`."""
    return {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)


def answers(host: str, port: int) -> bool:
    connection = http.client.HTTPConnection(
        connect_host(host), port, timeout=ANSWER_TIMEOUT_SECONDS
    )
    try:
        # Any status counts (a Host that ALLOWED_HOSTS refuses answers 400): the server
        # has answered, and that is all the banner waits for.
        connection.request("GET", "/healthz", headers={"Connection": "close"})
        connection.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def answering(host: str, port: int, pid: int) -> bool:
    while alive(pid):
        if answers(host, port):
            return True
        time.sleep(RETRY_SECONDS)
    return False


def main(argv: list[str]) -> int:
    usage = "usage: _address.py free HOST PORT | answering HOST PORT PID"
    if len(argv) < 3 or argv[0] not in ("free", "answering"):
        print(usage, file=sys.stderr)
        return 2
    host, port_text = argv[1], argv[2]
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        print(f"scripts/serve: PORT={port_text}: expected a port number (1-65535)", file=sys.stderr)
        return 1
    port = int(port_text)
    if argv[0] == "free":
        problem = free(host, port)
        if problem is not None:
            print(f"scripts/serve: {problem}", file=sys.stderr)
            return 1
        return 0
    if len(argv) != 4:
        print(usage, file=sys.stderr)
        return 2
    try:
        return 0 if answering(host, port, int(argv[3])) else 1
    except KeyboardInterrupt:  # Ctrl-C while the server starts: serve stops it, quietly
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
