"""bench/embedded_server.py's client runs against a real server (pytest-django's live
server, over a socket): it sets up its memories, measures new and kept-alive connections, and
its table and docs section render the figures. The benchmark itself starts scripts/serve and
the production set (`python -m bench.embedded_server`)."""

import json
from pathlib import Path

from bench.embedded_server import (
    embedded_server_section,
    markdown,
    measure,
    percentiles,
    set_up,
)
from memories.accounts.keys import api_key_create

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results"


def test_the_client_measures_first_and_kept_alive_requests_on_a_live_server(
    transactional_db, live_server
):
    _, key = api_key_create(name="bench", scopes=["read", "write"])
    port = int(live_server.url.rsplit(":", 1)[1])

    headers, memory_path = set_up(port, key, memories=3)

    measured = measure({"live": (port, headers, memory_path)}, requests=2, connections=2)["live"]

    assert measured["first_request_new_connection"]["n"] == 2
    assert set(measured["reused_connection"]) == {"healthz", "memory", "search"}
    assert all(block["n"] == 2 for block in measured["reused_connection"].values())


def test_percentiles_are_in_milliseconds():
    block = percentiles([0.001, 0.002, 0.003, 0.004, 0.100])

    assert (block["n"], block["p50_ms"], block["p95_ms"]) == (5, 3.0, 100.0)


def test_the_newest_results_render_with_the_gap_to_the_production_set():
    [path] = sorted(RESULTS.glob("embedded-server-*.json"))[-1:]
    data = json.loads(path.read_text())

    section = embedded_server_section(path.name, data)

    assert section[0].startswith("## The embedded default's server")
    rows = [line for line in markdown(data) if line.startswith("| embedded: ")]
    assert len(rows) == 1 and "| – |" not in rows[0]
    assert any(line.startswith("Embedded default minus production set") for line in section)
