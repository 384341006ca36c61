"""Support for tests/test_topology.py: the processes of the production topology, the stand-in
for the utility model, the product's end users, and readers of what the processes logged."""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

from tests.extraction.helpers import answer, memory
from tests.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parent.parent
TURNS = 6  # user messages per conversation: EXTRACTION_USER_MESSAGES, so the last one triggers

# What each user stores by hand (active, so searches find them) and what each of a user's
# conversations is about (the model proposes it: pending review). No two are alike, so
# extraction's duplicate check keeps every one.
OWN_MEMORIES = [
    ("coffee", "Drinks oat milk flat whites"),
    ("editor", "Writes code in Neovim"),
    ("languages", "Speaks Portuguese and German"),
    ("birthday", "Birthday on 12 March"),
    ("football", "Supports Benfica"),
]
SEARCHES = [
    "coffee order",
    "which code editor",
    "what languages do I speak",
    "when is my birthday",
    "football club",
    "tell me about myself",
]
FACTS = [
    ("pet", "Has a grey cat called Miso"),
    ("home city", "Lives in Porto near the river"),
    ("job", "Works night shifts as a nurse"),
    ("allergy", "Allergic to peanuts"),
    ("instrument", "Plays the cello in an amateur orchestra"),
    ("sport", "Runs half marathons every spring"),
    ("car", "Drives an old green Volvo"),
    ("holiday", "Spends every August in the Azores"),
]
REF = re.compile(r"ref:u(\d{2})c(\d)")
TASK_EVENT = re.compile(r"Task ([\w.]+)\[([0-9a-f-]{36})\] (received|succeeded|raised|retry)")


# --- the model provider -------------------------------------------------------------------------


class ConversationModel:
    """The utility model's stand-in: for each conversation in the prompt (its user messages
    carry ref:u<user>c<conversation>) one memory, the fact that conversation is about. After
    slow_down(n), the next n requests take `slow_seconds`, so that an extraction is under way
    when the test kills a worker."""

    def __init__(self, slow_seconds: float) -> None:
        self.server = FakeOpenAI()
        self.server.chat_responder = self.answer
        self.slow_seconds = slow_seconds
        self.lock = threading.Lock()
        self.slow_left = 0
        self.in_flight: Counter = Counter()
        self.calls: Counter = Counter()

    def answer(self, body: dict) -> dict:
        text = "\n".join(message["content"] for message in body["messages"])
        refs = sorted({(int(user), int(number)) for user, number in REF.findall(text)})
        with self.lock:
            is_slow = self.slow_left > 0
            self.slow_left -= is_slow
            self.calls.update(refs)
            self.in_flight.update(refs)
        try:
            if is_slow:
                time.sleep(self.slow_seconds)
            return answer(*(memory(*FACTS[number]) for _, number in refs))
        finally:
            with self.lock:
                self.in_flight.subtract(refs)

    def slow_down(self, requests: int) -> None:
        with self.lock:
            self.slow_left = requests

    def refs_in_flight(self) -> set[tuple[int, int]]:
        """(user, conversation) of the requests being answered now."""
        with self.lock:
            return {ref for ref, count in self.in_flight.items() if count > 0}


# --- the processes ------------------------------------------------------------------------------


class Service:
    """One process of the topology with its output in a log file, in a process group of its
    own so that a kill also takes the children (a Celery worker's pool, gunicorn's workers)."""

    def __init__(self, name: str, command: list[str], env: dict, log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def assert_running(self) -> None:
        code = self.process.poll()
        assert code is None, f"{self.name} exited with {code}:\n{self.log()[-6000:]}"

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """A graceful stop (SIGTERM, as scripts/serve sends), then SIGKILL for anything of
        its group still there."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)

    # What a Celery process logged.

    def task_events(self) -> list[tuple[str, str, str]]:
        """(task name, task id, event) of the Celery log lines, in order."""
        return TASK_EVENT.findall(self.log())

    def ended_tasks(self) -> Counter:
        """Task id: how many times a task of that id ended here."""
        return Counter(task_id for _, task_id, event in self.task_events() if event != "received")

    def unfinished_tasks(self) -> set[str]:
        """Tasks the worker took and has not ended (acks_late: their messages are not acked)."""
        received = {task_id for _, task_id, event in self.task_events() if event == "received"}
        return received - set(self.ended_tasks())

    def ended_at(self, task_id: str) -> datetime | None:
        """When a task of that id last ended here, from the JSON log lines."""
        ended = None
        for line in self.log().splitlines():
            events = [event for _, id_, event in TASK_EVENT.findall(line) if id_ == task_id]
            if line.startswith("{") and events and events[0] != "received":
                ended = datetime.fromisoformat(json.loads(line)["time"])
        return ended

    def succeeded(self, task: str) -> Counter:
        return Counter(
            task_id
            for name, task_id, event in self.task_events()
            if name == task and event == "succeeded"
        )

    def beat_sends(self, entry: str) -> list[datetime]:
        """When beat sent the task of a schedule entry, from its JSON log lines."""
        return [
            datetime.fromisoformat(json.loads(line)["time"])
            for line in self.log().splitlines()
            if line.startswith("{") and f"Sending due task {entry} " in line
        ]


def wait_until(condition, *, what: str, timeout: float, alive: list[Service]):
    """condition()'s first true value; fails if a process of `alive` exits meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        for service in alive:
            service.assert_running()
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(port: int, path: str, headers: dict | None = None) -> tuple[int, bytes, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        connection.close()


def is_ready(port: int) -> bool:
    try:
        return get(port, "/readyz")[0] == 200
    except OSError:
        return False


# --- the product's end users --------------------------------------------------------------------


@dataclass
class Conversation:
    user: int
    number: int
    topic_id: str
    user_messages: int = 0
    task_ids: list[str] = field(default_factory=list)

    @property
    def is_complete(self) -> bool:
        """All its user messages were posted, so the last post queued its extraction."""
        return self.user_messages == TURNS


class Tally:
    """What every end user saw, added up across their threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statuses: Counter = Counter()  # (what, status) -> answers
        self.hits: Counter = Counter()  # memory id -> search results it appeared in
        self.search_seconds: list[float] = []
        self.errors: list[str] = []

    def answered(self, what: str, status: int) -> None:
        with self.lock:
            self.statuses[what, status] += 1

    def searched(self, seconds: float, memory_ids: list[str]) -> None:
        with self.lock:
            self.search_seconds.append(seconds)
            self.hits.update(memory_ids)

    def failed(self, error: str) -> None:
        with self.lock:
            self.errors.append(error)


class EndUser:
    """One end user of the product, acting through the product's key with X-User-Id. Its
    requests go to the web processes in turn (as a load balancer sends them), each over a
    keep-alive connection. It stores its own memories, then has conversations (a post per
    turn, then a search, as a chat product recalls for the model's answer) until the
    load ends, and searches once it has had every conversation."""

    def __init__(self, number: int, *, api_key: str, ports: list[int], tally: Tally) -> None:
        self.number = number
        self.external_id = f"topology-user-{number:02d}"
        self.headers = {"Authorization": f"Bearer {api_key}", "X-User-Id": self.external_id}
        self.connections = [
            http.client.HTTPConnection("127.0.0.1", port, timeout=60) for port in ports
        ]
        self.calls = 0
        self.tally = tally
        self.own_memories: dict[str, tuple[str, str]] = {}
        self.conversations: list[Conversation] = []

    def call(self, what: str, method: str, path: str, body: dict | None = None):
        """The JSON of a 2xx answer; any other status raises (and ends the user's run)."""
        connection = self.connections[self.calls % len(self.connections)]
        self.calls += 1
        headers = dict(self.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body)
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        data = response.read()
        self.tally.answered(what, response.status)
        if not 200 <= response.status < 300:
            raise AssertionError(f"{method} {path} answered {response.status}: {data[:300]!r}")
        return json.loads(data) if data else None

    def search(self, query: str) -> None:
        started = time.perf_counter()
        found = self.call("search", "GET", "/api/memories/search?" + urlencode({"q": query}))
        self.tally.searched(time.perf_counter() - started, [hit["id"] for hit in found["data"]])

    def listed(self, status: str) -> list[dict]:
        """The user's memories of one status, as GET /api/memories lists them."""
        query = urlencode({"status": status, "page_size": 200})
        body = self.call("list", "GET", f"/api/memories?{query}")
        assert body["next"] is None
        return body["data"]

    def run(self, stop: threading.Event) -> None:
        """Act until `stop` is set."""
        try:
            self._run(stop)
        except Exception as exc:
            self.tally.failed(f"{self.external_id}: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        for connection in self.connections:
            connection.close()

    def _run(self, stop: threading.Event) -> None:
        memories = [{"key": key, "value": value} for key, value in OWN_MEMORIES]
        created = self.call("create", "POST", "/api/memories/batch", {"memories": memories})
        self.own_memories = {m["id"]: (m["key"], m["value"]) for m in created["data"]}
        for number in range(len(FACTS)):
            if stop.is_set():
                return
            topic = self.call("create", "POST", "/api/topics", {"title": f"chat {number}"})
            conversation = Conversation(self.number, number, topic["id"])
            self.conversations.append(conversation)
            ref = f"ref:u{self.number:02d}c{number}"
            for turn in range(TURNS):
                if stop.is_set():
                    return
                turn_messages = [
                    {"role": "user", "content": f"Something about me, turn {turn} ({ref})."},
                    {"role": "assistant", "content": f"Noted, turn {turn}."},
                ]
                posted = self.call(
                    "post messages",
                    "POST",
                    f"/api/topics/{topic['id']}/messages",
                    {"messages": turn_messages},
                )
                conversation.user_messages += 1
                if posted["extraction"]["status"] != "not_triggered":
                    conversation.task_ids.append(posted["extraction"]["task_id"])
                self.search(SEARCHES[(self.number + turn) % len(SEARCHES)])
        while not stop.is_set():
            self.search(SEARCHES[self.calls % len(SEARCHES)])
