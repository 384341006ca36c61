"""The OpenAI tool-calling helper of the Python client (memory_client.openai_tools) with the
real openai SDK: the model (tests/fake_openai.py's server, answering a tool call) is given the
service's tools, its tool calls are answered through the live service, and the memory is
there afterwards."""

import asyncio
import json

import openai
import pytest
from memory_client.openai_tools import AsyncMemoryTools, MemoryTools

from memories.models import Memory
from tests.clients.python_support import live_service
from tests.fake_openai import FakeOpenAI

SAVE_DIET = {
    "key": "diet",
    "value": "Vegetarian",
    "confidence": 0.9,
    "category": "food",
    "importance": None,
    "scope": None,
    "replace": None,
}


class ToolCallingModel(FakeOpenAI):
    """The fake provider, answering chat completions with the tool calls in `tool_calls`
    (then, once the conversation holds tool results, with text)."""

    def __init__(self, tool_calls: list[dict]) -> None:
        self.tool_calls = tool_calls
        super().__init__()

    def _handler(self):
        model = self

        class Handler(super()._handler()):
            def _chat(self, body):
                answered = body["messages"][-1]["role"] == "tool"
                message = (
                    {"role": "assistant", "content": "Noted."}
                    if answered
                    else {"role": "assistant", "content": None, "tool_calls": model.tool_calls}
                )
                self._send(
                    200,
                    {
                        "id": "chatcmpl-tools",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop" if answered else "tool_calls",
                                "message": message,
                            }
                        ],
                    },
                )

        return Handler


def function_call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


@pytest.fixture
def service(transactional_db, live_server):
    return live_service(live_server)


@pytest.fixture
def model():
    server = ToolCallingModel(
        [
            function_call("call_1", "memory_save", SAVE_DIET),
            function_call("call_2", "memory_forget", {"memory_id": "not-an-id"}),
            function_call("call_3", "get_weather", {"city": "Porto"}),
        ]
    ).start()
    yield server
    server.stop()


def test_the_models_tool_calls_are_answered_through_the_service(service, model):
    llm = openai.OpenAI(base_url=model.base_url, api_key="test-key", max_retries=0)
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    with service.client("alice") as alice:
        memory_tools = MemoryTools(alice)
        messages: list = [{"role": "user", "content": "I'm vegetarian, remember that."}]

        reply = (
            llm.chat.completions.create(
                model="fake", messages=messages, tools=[*memory_tools.tools, weather]
            )
            .choices[0]
            .message
        )
        answers = memory_tools.answer(reply)
        messages += [reply.model_dump(exclude_none=True), *answers]
        final = llm.chat.completions.create(model="fake", messages=messages).choices[0].message

        recalled = alice.search("what does the user eat")

    sent_tools = [tool["function"]["name"] for tool in model.chat_requests()[0]["tools"]]
    assert sent_tools == [
        "memory_save",
        "memory_recall",
        "memory_context",
        "memory_profile",
        "memory_forget",
        "get_weather",
    ]
    assert [answer["tool_call_id"] for answer in answers] == ["call_1", "call_2"]  # not weather
    assert all(answer["role"] == "tool" for answer in answers)
    saved = json.loads(answers[0]["content"])
    assert saved["created"] is True and saved["memory"]["value"] == "Vegetarian"
    refused = json.loads(answers[1]["content"])  # the error, for the model to read
    assert refused["code"] == "invalid" and "memory_id" in refused["fields"]
    assert final.content == "Noted."
    assert model.chat_requests()[1]["messages"][-1]["tool_call_id"] == "call_2"

    memory = Memory.objects.get(key="diet")
    assert (memory.value, memory.user.external_id, memory.source) == ("Vegetarian", "alice", "tool")
    assert [hit["key"] for hit in recalled] == ["diet"]


def test_the_async_helper_answers_plain_dict_tool_calls_in_a_project(service):
    async def scenario():
        async with service.async_client("bob") as bob:
            project_id = (await bob.create_project("garden"))["id"]
            memory_tools = AsyncMemoryTools(bob, project_id=project_id)
            save = function_call("call_9", "memory_save", {**SAVE_DIET, "scope": "project"})
            return project_id, await memory_tools.answer(
                {"role": "assistant", "tool_calls": [save]}
            )

    project_id, [answer] = asyncio.run(scenario())

    assert answer["tool_call_id"] == "call_9"
    assert json.loads(answer["content"])["memory"]["project_id"] == project_id
    memory = Memory.objects.get(key="diet")
    assert (memory.scope, str(memory.project_id)) == ("project", project_id)
