"""The whole integration path, as a product backend walks it: a service key, a
40-message conversation of a new end user ingested in one request, its extraction run
followed to done, approval with a review key, recall through REST and through MCP, export,
erasure, and nothing of the user left in the database."""

import io
import json
import time

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from memories.models import Memory, Status, User
from tests.erasure import tables_mentioning, traces_of
from tests.extraction.helpers import answer, memory
from tests.memories.mcp_support import call, http_server, over_http, result_body

END_USER = "customer-8812"
MARKER = "zebrafish8812"  # in every message, so a leftover copy is found


def create_key(*scopes: str) -> str:
    out = io.StringIO()
    call_command("create_api_key", "chat backend", "--scopes", ",".join(scopes), stdout=out)
    return out.getvalue().strip()


def bearer(key: str, external_id: str | None = None) -> APIClient:
    client = APIClient()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    if external_id is not None:
        headers["HTTP_X_USER_ID"] = external_id
    client.credentials(**headers)
    return client


def conversation(turns: int) -> list[dict]:
    """A support chat of `turns` user messages, each answered by the assistant."""
    facts = [
        "I moved to Lisbon in March",
        "my beagle Pico needs a new vet",
        "I work as a marine biologist",
        "I am vegetarian",
    ]
    messages = []
    for turn in range(turns):
        messages.append(
            {"role": "user", "content": f"{facts[turn % len(facts)]} ({MARKER} {turn})"}
        )
        messages.append({"role": "assistant", "content": f"Noted, thanks! ({MARKER} {turn})"})
    return messages


def followed(client: APIClient, task_id: str, timeout: float = 60.0) -> dict:
    """The extraction run, once it has finished."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/api/extraction-runs/{task_id}")
        assert response.status_code == 200, response.content
        run = response.json()
        if run["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return run
        time.sleep(0.2)


@pytest.fixture
def model(settings, fake_openai):
    """The utility model (the fake provider) with its answer for this conversation."""
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_MODEL = "fake-model"
    settings.LLM_API_KEY = "k"
    settings.EXTRACTION_USER_MESSAGES = 6
    fake_openai.chat_answers.append(
        answer(
            memory("home city", "Lives in Lisbon since March"),
            memory("dog", "Has a beagle named Pico"),
            memory("job", "Works as a marine biologist"),
            memory("diet", "Is vegetarian"),
        )
    )
    return fake_openai


@pytest.mark.django_db(transaction=True)
def test_a_product_backend_integrates_end_to_end(model):
    product_key = create_key("read", "write")
    review_key = create_key("review")
    backend = bearer(product_key, END_USER)
    reviewer = bearer(review_key)

    # Ingest: a new end user's 40-message conversation in one request.
    topic = backend.post("/api/topics", {"title": "support chat"}, format="json").json()
    messages = conversation(20)
    ingested = backend.post(
        f"/api/topics/{topic['id']}/messages", {"messages": messages}, format="json"
    )
    assert ingested.status_code == 201, ingested.content
    body = ingested.json()
    assert [m["content"] for m in body["data"]] == [m["content"] for m in messages]
    assert body["extraction"]["status"] != "not_triggered", body
    user = User.objects.get(external_id=END_USER)

    # The extraction run, followed to its end: one model call, four proposals.
    run = followed(backend, body["extraction"]["task_id"])
    assert run["status"] == "done", run
    assert (run["created"], run["merged"], run["skipped"]) == (4, 0, 0)
    assert len(run["memory_ids"]) == 4
    assert len(model.chat_requests()) == 1
    assert Memory.objects.filter(user=user, status=Status.PENDING_REVIEW).count() == 4

    # Review with the review key: the proposals wait across users; approve them.
    pending = reviewer.get("/api/admin/memories/pending").json()["data"]
    assert {m["id"] for m in pending} == set(run["memory_ids"])
    assert {m["external_user_id"] for m in pending} == {END_USER}
    approved = reviewer.post(
        "/api/admin/memories/bulk-approve", {"ids": run["memory_ids"]}, format="json"
    )
    assert approved.json() == {"approved": 4}

    # Recall through REST.
    hits = backend.get("/api/memories/search", {"q": "What is the dog called?"}).json()["data"]
    assert hits and hits[0]["key"] == "dog", [h["key"] for h in hits]
    hint = backend.post(
        "/api/memories/context", {"query": "Which city does the user live in?"}, format="json"
    ).json()["hint"]
    assert "Lives in Lisbon since March" in hint

    # Recall through MCP, authenticated like the REST API.
    with http_server() as url:
        result = over_http(
            url,
            {"Authorization": f"Bearer {product_key}", "X-User-Id": END_USER},
            call("memory_recall", {"query": "Is the user a marine biologist?"}),
        )
    assert not result.isError, result
    assert result_body(result)["data"][0]["key"] == "job"

    # Export: one line per memory, as NDJSON.
    export = backend.get("/api/memories/export")
    assert export.status_code == 200
    assert export["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in b"".join(export.streaming_content).splitlines()]
    assert sorted(m["key"] for m in lines) == ["diet", "dog", "home city", "job"]

    # Erase: nothing of the end user is left in any table.
    needles = traces_of(user, MARKER)
    assert tables_mentioning(needles)
    assert reviewer.delete(f"/api/users/{user.id}").status_code == 204
    assert tables_mentioning(needles) == set()
    assert backend.get("/api/memories").json()["count"] == 0  # a new, empty end user
