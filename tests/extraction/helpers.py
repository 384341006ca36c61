"""Shared set-up and checks for the extraction tests: topics and messages through the API,
answers for the fake model, and what the model was shown."""

import uuid

from extraction.models import ExtractionRun, ExtractionState
from memories.models import Memory


def memory(key: str, value: str, **fields) -> dict:
    """One memory as the utility model answers it (the prompt's contract)."""
    return {
        "key": key,
        "value": value,
        "category": "personal",
        "importance": 0.6,
        "confidence": 0.8,
        "scope": "user",
        **fields,
    }


def answer(*memories: dict) -> dict:
    return {"memories": list(memories)}


def new_topic(api, **fields) -> str:
    response = api.post("/api/topics", fields, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def post(api, topic_id: str, content: str, role: str = "user") -> dict:
    response = api.post(
        f"/api/topics/{topic_id}/messages", {"role": role, "content": content}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


def new_work_session(api, project_id: str | None = None) -> str:
    body = {"project_id": project_id} if project_id else {}
    response = api.post("/api/work-sessions", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def post_work(api, session_id: str, content: str, role: str = "user") -> None:
    response = api.post(
        f"/api/work-sessions/{session_id}/messages",
        {"role": role, "content": content},
        format="json",
    )
    assert response.status_code == 201, response.json()


def new_project(api, name: str = "Billing service") -> str:
    response = api.post("/api/projects", {"name": name}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def extract(api, topic_id: str):
    return api.post(f"/api/memories/extract/{topic_id}")


def extract_work(api, session_id: str):
    return api.post(f"/api/memories/extract-work/{session_id}")


def accepted(response, status: str) -> dict:
    """A 202 of the extraction endpoints with the given outcome."""
    assert response.status_code == 202, response.content[:500]
    body = response.json()
    assert body["task_id"], body
    assert body["status"] == status, body
    return body


def transcript(chat_request: dict) -> str:
    """Everything the model was shown in one chat-completions request."""
    return "\n".join(m["content"] for m in chat_request["messages"])


def conversation_part(chat_request: dict) -> str:
    """The part of the prompt that carries the conversation (not our instructions)."""
    return "\n".join(m["content"] for m in chat_request["messages"] if m["role"] != "system")


def cursor_of(topic_id: str) -> int:
    state = ExtractionState.objects.filter(topic_id=topic_id).first()
    return state.last_message_id if state else 0


def runs_of(source_id: str) -> list[ExtractionRun]:
    return list(ExtractionRun.objects.filter(source_id=source_id).order_by("created_at"))


def memories_of(user) -> list[Memory]:
    return list(Memory.objects.filter(user=user).order_by("created_at"))


def run_of(api, task_id: str) -> dict:
    """GET /api/extraction-runs/{task_id}, which must answer 200."""
    response = api.get(f"/api/extraction-runs/{task_id}")
    assert response.status_code == 200, response.content[:500]
    return response.json()


def run_on_its_way(user, source_id: str, *, kind: str = "topic", **fields) -> ExtractionRun:
    """A run queued (or, with status/started_at, running) that no task has finished yet: what
    a busy broker leaves behind. Set-up only; real runs come from the endpoints."""
    fields.setdefault("status", "queued")
    return ExtractionRun.objects.create(
        task_id=str(uuid.uuid4()), user=user, source_kind=kind, source_id=source_id, **fields
    )


def conversation(user_messages: int, text: str = "I live in Lisbon and keep bees") -> list[dict]:
    """A batch body's messages: each user message followed by an assistant reply."""
    messages = []
    for n in range(user_messages):
        messages.append({"role": "user", "content": f"{text}, part {n}."})
        messages.append({"role": "assistant", "content": f"Noted, {n}."})
    return messages
