"""OpenAI tool calling with the service's memory tools: the tools list to pass as
`tools=[...]` (GET /api/tools, already in OpenAI's function-calling format, strict schemas)
and a dispatcher that answers the model's tool calls through POST /api/tools/{name},
giving the `{"role": "tool", "tool_call_id", "content"}` messages to append.

Tool calls may be the openai SDK's objects (message.tool_calls) or plain dicts of the same
shape. Calls of tools that are not the service's are left out of the answer (answer them
yourself). A call the service refuses (bad arguments, an unknown memory id: 400, 404, 409)
is answered with the error JSON as its content, so the model can read it and try again;
other errors (401, 403, 429 after retries, 5xx) are raised."""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from memory_client.async_client import AsyncMemoryClient
from memory_client.client import MemoryClient
from memory_client.errors import BadRequest, Conflict, MemoryServiceError, NotFound
from memory_client.types import Tool

# Refusals of the call itself, which the model can act on.
MODEL_READABLE_ERRORS = (BadRequest, NotFound, Conflict)


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Any  # the model's JSON string, or an object


def _field(thing: Any, name: str) -> Any:
    return thing.get(name) if isinstance(thing, dict) else getattr(thing, name, None)


def tool_calls_of(calls: Any) -> list[ToolCall]:
    """The function calls in `calls`: an assistant message (SDK object or dict) or its
    tool_calls, each an SDK object or a dict."""
    if isinstance(calls, dict) or hasattr(calls, "role"):  # a message
        calls = _field(calls, "tool_calls") or []
    parsed = []
    for call in calls:
        function = _field(call, "function")
        if function is None:  # not a function call (a custom tool's)
            continue
        parsed.append(
            ToolCall(
                id=str(_field(call, "id")),
                name=str(_field(function, "name")),
                arguments=_field(function, "arguments") or "{}",
            )
        )
    return parsed


def tool_message(call: ToolCall, content: Any) -> ToolMessage:
    return {"role": "tool", "tool_call_id": call.id, "content": json.dumps(content)}


def _names(tools: Iterable[Tool]) -> frozenset[str]:
    return frozenset(tool["function"]["name"] for tool in tools)


class MemoryTools:
    """The service's tools for one end user's conversation (the client's user). `context`
    (topic_id, project_id, persona_id, work_session_id) is sent with every call: recall then
    draws from those scopes too, and memory_save may write into them."""

    def __init__(self, client: MemoryClient, **context: Any) -> None:
        self.client = client
        self.context = context
        self._tools: list[Tool] | None = None

    @property
    def tools(self) -> list[Tool]:
        """The tools in OpenAI's format (fetched once)."""
        if self._tools is None:
            self._tools = self.client.tools()
        return self._tools

    def answer(self, tool_calls: Any) -> list[ToolMessage]:
        """Run the model's calls of the memory tools, in order; their tool messages."""
        ours = _names(self.tools)
        messages = []
        for call in tool_calls_of(tool_calls):
            if call.name not in ours:
                continue
            try:
                result: Any = self.client.call_tool(call.name, call.arguments, **self.context)
            except MODEL_READABLE_ERRORS as error:
                result = _refusal(error)
            messages.append(tool_message(call, result))
        return messages


class AsyncMemoryTools:
    """MemoryTools for AsyncMemoryClient: `await tools.get_tools()`, `await
    tools.answer(...)`."""

    def __init__(self, client: AsyncMemoryClient, **context: Any) -> None:
        self.client = client
        self.context = context
        self._tools: list[Tool] | None = None

    async def get_tools(self) -> list[Tool]:
        if self._tools is None:
            self._tools = await self.client.tools()
        return self._tools

    async def answer(self, tool_calls: Any) -> list[ToolMessage]:
        ours = _names(await self.get_tools())
        messages = []
        for call in tool_calls_of(tool_calls):
            if call.name not in ours:
                continue
            try:
                result: Any = await self.client.call_tool(call.name, call.arguments, **self.context)
            except MODEL_READABLE_ERRORS as error:
                result = _refusal(error)
            messages.append(tool_message(call, result))
        return messages


def _refusal(error: MemoryServiceError) -> Any:
    return error.body or {"code": error.code, "detail": error.detail, "fields": error.fields}
