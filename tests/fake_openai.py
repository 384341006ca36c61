"""A small HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and embeddings
protocol: the one stand-in the tests use, for the outside model provider.

Embeddings are deterministic bags of hashed words (texts sharing words point the same way).
Chat answers come from a queue the test fills: a dict is sent as the JSON body of a normal
completion, ("status", code) answers with that HTTP error, ("sleep", seconds) stalls, and a
str is sent as the message content. With the queue empty, `chat_responder` (when set) makes
the answer from the request's body, in the request's own thread. Every request is recorded."""

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def bag_of_words_vector(text: str, dimensions: int) -> list[float]:
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class FakeOpenAI:
    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.requests: list[dict] = []
        self.chat_answers: deque = deque()
        self.embedding_failures: deque = deque()
        self.chat_responder = None  # body -> answer, for answers that depend on the request
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # shutdown() waits for serve_forever's next poll: the default 0.5 s, in each of
        # some 300 teardowns, was a third of the SQLite pass.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def chat_requests(self) -> list[dict]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, "body": body})
                if self.path.endswith("/embeddings"):
                    return self._embeddings(body)
                if self.path.endswith("/chat/completions"):
                    return self._chat(body)
                self._send(404, {"error": {"message": "unknown path"}})

            def _embeddings(self, body):
                if fake.embedding_failures:
                    return self._send(fake.embedding_failures.popleft(), {"error": {}})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                dimensions = body.get("dimensions") or fake.dimensions
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": bag_of_words_vector(t, dimensions),
                    }
                    for i, t in enumerate(texts)
                ]
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model", "fake"),
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    },
                )

            def _chat(self, body):
                if fake.chat_answers:
                    answer = fake.chat_answers.popleft()
                elif fake.chat_responder is not None:
                    answer = fake.chat_responder(body)
                else:
                    answer = {"memories": []}
                if isinstance(answer, tuple) and answer[0] == "status":
                    return self._send(answer[1], {"error": {"message": "scripted failure"}})
                if isinstance(answer, tuple) and answer[0] == "sleep":
                    time.sleep(answer[1])
                    answer = {"memories": []}
                content = answer if isinstance(answer, str) else json.dumps(answer)
                self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

        return Handler
