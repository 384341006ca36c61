"""A client for the memory service: MemoryClient and AsyncMemoryClient over httpx, typed
answers, errors carrying the API's error JSON. Adapters: memory_client.langgraph (a LangGraph
store; the `langgraph` extra) and memory_client.openai_tools (OpenAI tool calling)."""

from memory_client.async_client import AsyncMemoryClient
from memory_client.client import MemoryClient
from memory_client.errors import (
    AuthenticationFailed,
    BadRequest,
    Conflict,
    MemoryServiceError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ServerError,
    ServiceUnavailable,
)
from memory_client.transport import RetryPolicy
from memory_client.types import (
    Context,
    Entity,
    EntityDetail,
    ExplainedSearch,
    Explanation,
    ExportedMemory,
    ExtractionRun,
    Filter,
    Memory,
    Metadata,
    Profile,
    ProfileSummary,
    RecallResult,
    SavedMemory,
    Tool,
)

__all__ = [
    "AsyncMemoryClient",
    "AuthenticationFailed",
    "BadRequest",
    "Conflict",
    "Context",
    "ExplainedSearch",
    "Explanation",
    "Entity",
    "EntityDetail",
    "ExportedMemory",
    "ExtractionRun",
    "Filter",
    "Memory",
    "MemoryClient",
    "MemoryServiceError",
    "Metadata",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "Profile",
    "ProfileSummary",
    "RateLimited",
    "RecallResult",
    "RetryPolicy",
    "SavedMemory",
    "ServerError",
    "ServiceUnavailable",
    "Tool",
]
