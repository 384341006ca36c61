"""Every tool's answer over REST (POST /api/tools/{name}) is one the OpenAPI schema documents:
schemathesis checks each answer against the published schema of a live server, for a user
with a pinned memory, a memory by category and an entity, so no part of an answer is empty."""

import pytest
import requests
from schemathesis.core.failures import FailureGroup

from memories.models import Memory, User
from tests.conftest import client_for
from tests.schema_fuzz import CHECKS, load_schema


def _arguments(user: User) -> dict[str, dict]:
    memory = Memory.objects.filter(user=user).first()
    return {
        "memory_save": {"key": "pet", "value": "Has a dog called Pip", "category": "family"},
        "memory_recall": {"query": "What is my wife's name?"},
        "memory_context": {"query": "Plan a dinner with my wife", "profile": True},
        "memory_profile": {},
        "memory_forget": {"memory_id": str(memory.id)},
    }


@pytest.mark.parametrize(
    "name", ["memory_save", "memory_recall", "memory_context", "memory_profile", "memory_forget"]
)
def test_each_tool_answers_as_the_schema_says(transactional_db, live_server, name):
    user = User.objects.create_user(username="tool-answers")
    api = client_for(user)
    for memory in (
        {"key": "wife", "value": "Wife Sofia is a nurse", "category": "family", "pinned": True},
        {"key": "diet", "value": "Vegetarian", "category": "food"},
    ):
        assert api.post("/api/memories", memory, format="json").status_code == 201
    authorization = api._credentials["HTTP_AUTHORIZATION"]
    operation = load_schema(live_server.url)["/api/tools/{name}"]["POST"]
    case = operation.Case(path_parameters={"name": name}, body=_arguments(user)[name])

    with requests.Session() as http:
        try:
            response = case.call_and_validate(
                base_url=live_server.url,
                session=http,
                headers={"Authorization": authorization},
                checks=CHECKS,
            )
        except FailureGroup as group:
            pytest.fail("\n".join(failure.message[:600] for failure in group.exceptions))

    assert response.status_code in (200, 201)
    if name == "memory_profile":
        assert response.json()["pinned"] and response.json()["categories"]
