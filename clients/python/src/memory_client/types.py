"""The service's answers as typed dictionaries: the JSON as it arrives, with the field names of
docs/api.md, so nothing is renamed between the API's documentation and a program."""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

Scope = Literal["user", "project", "session", "persona", "persona_user"]
Status = Literal["active", "pending_review", "archived"]

# A memory's `metadata`: a JSON object of the product's own keys (docs/api.md, "Metadata"):
# names of 1 to 64 characters without . " \ or a control character, and not an integer;
# nested at most 5 deep; at most 8192 bytes of JSON. Saved and returned as given, filtered
# on, never ranked on.
Metadata: TypeAlias = dict[str, Any]

# A filter (docs/api.md, "Filters"), the one language of every read: a JSON object of `and`
# (a list of filters), `or` (a list), `not` (a filter), and conditions on fields:
# {"<field>": value} (equality) or {"<field>": {"eq" | "ne" | "in" | "nin" | "gt" | "gte" |
# "lt" | "lte" | "contains" | "exists": value}}. Fields: category, key, scope, source,
# importance, confidence, created_at, updated_at, valid_from, pinned and
# "metadata.<key>[.<key>...]". A plain mapping rather than a TypedDict: its field names
# ("metadata.app") are the product's own.
Filter: TypeAlias = Mapping[str, Any]


class Memory(TypedDict):
    id: str
    scope: Scope
    owner_id: str | None
    user_id: str | None
    external_user_id: str | None
    persona_id: str | None
    project_id: str | None
    topic_id: str | None
    key: str
    value: str
    category: str
    source: str
    source_channel_id: str | None
    source_topic_id: str | None
    source_work_session_id: str | None
    source_message_ids: list[int]
    importance: float
    confidence: float
    status: Status
    pinned: bool  # in every context hint of its scopes, ahead of the ranked memories
    metadata: Metadata  # the product's own keys ({} when none)
    supersedes_id: str | None
    superseded_by_id: str | None
    valid_from: str
    valid_until: str | None
    expires_at: str | None  # when it stops being current, as saved (null: never)
    retention_expires_at: str | None  # when the tenant's retention rules make it stop
    retention_rule_id: str | None
    access_count: int
    last_accessed_at: str | None
    created_at: str
    updated_at: str


class SavedMemory(Memory):
    """The answer to a save: the memory that holds the fact."""

    created: bool  # false: a current memory said this already; nothing new was written
    superseded_ids: list[str]
    similar_ids: list[str] | None


class ExportedEntity(TypedDict):
    name: str
    kind: str
    relation: str
    aliases: list[str]


class ExportedMemory(Memory):
    deleted_at: str | None
    entities: list[ExportedEntity]


class Entity(TypedDict):
    """A person, pet, place, organisation or other thing the user's memories are about."""

    id: str
    user_id: str
    kind: str  # person, pet, place, organisation, other
    relation: str  # what it is to the user: wife, son, dog, employer; "" when unknown
    name: str
    aliases: list[str]
    memory_count: int
    created_at: str
    updated_at: str


class EntityDetail(Entity):
    memories: list[Memory]


class ScoreParts(TypedDict):
    relevance: float
    entity: float  # what naming one of the memory's entities added
    importance: float
    recency: float
    frequency: float
    scope_bonus: float


class RecallResult(Memory):
    """A memory found by search or context, with its score and what the score is made of."""

    score: float
    score_parts: ScoreParts


class ProfileSummary(TypedDict):
    """The short text about who the user is, written in the background."""

    text: str
    written_by: str  # template, or llm
    made_at: str
    memories_read: list[dict[str, str]]  # [{id, updated_at}] it was written from
    error: str  # why the LLM did not write it (the template did); "" if nothing failed


class QueryReading(TypedDict):
    """What recall made of the query (explain=True)."""

    read: str  # the part recall read: the end of a long message
    cut: bool
    language: str | None  # ISO 639-1, None when unsure
    language_probability: float | None
    about_user_probability: float | None
    about_user: bool
    read_as: str | None  # small talk or a question about others, else None


class Considered(TypedDict):
    """A memory recall considered, returned or not, and why (explain=True)."""

    memory: Memory
    decision: str  # "returned" or "excluded"
    reason: str
    gate: str | None
    score: float | None
    score_parts: ScoreParts | None
    similarity: float | None
    calibrated_similarity: float | None
    keyword_evidence: float
    entity_evidence: float


class Explanation(TypedDict):
    query: QueryReading
    candidates: list[Considered]


class ExplainedSearch(TypedDict):
    data: list[RecallResult]
    explanation: Explanation


class Context(TypedDict):
    hint: str
    memories: list[RecallResult]
    profile: ProfileSummary | None  # with profile=True, once a summary has been written
    explanation: NotRequired[Explanation]  # with explain=True


class CategoryGroup(TypedDict):
    category: str  # "" for the memories without one
    memories: list[Memory]


class RelationGroup(TypedDict):
    relation: str  # "" for the entities without one
    entities: list[Entity]


class Profile(TypedDict):
    """Who the user is: pins, current memories by category, entities by relation, summary."""

    user_id: str
    external_user_id: str | None
    pinned: list[Memory]
    categories: list[CategoryGroup]
    memory_count: int
    truncated: bool
    entities: list[RelationGroup]
    summary: ProfileSummary | None  # None until the background task first writes it
    summary_stale: bool


class Me(TypedDict):
    id: str
    username: str
    external_id: str | None
    is_staff: bool


class Topic(TypedDict):
    id: str
    title: str
    persona_id: str | None
    project_id: str | None
    channel_id: str | None
    created_at: str


class Project(TypedDict):
    id: str
    name: str
    created_at: str


class RunSource(TypedDict):
    kind: Literal["topic", "work_session"]
    id: str


class ExtractionRun(TypedDict):
    task_id: str
    status: Literal["queued", "running", "done", "skipped", "failed"]
    source: RunSource
    created: int
    merged: int
    skipped: int
    memory_ids: list[str]
    error: str | None
    reason: str | None
    started_at: str | None
    finished_at: str | None
    created_at: str
    result: NotRequired[Any]


class Message(TypedDict):
    id: int
    role: Literal["user", "assistant", "system"]
    content: str
    created_at: str


class MessagesPosted(TypedDict):
    """The answer to posting messages: them, and what happened to extraction (`{"status":
    "not_triggered", "reason"}` or the run it started)."""

    data: list[Message]
    extraction: dict[str, Any]


class ToolFunction(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


class Tool(TypedDict):
    """One tool in OpenAI's function-calling format, as `tools=[...]` takes it."""

    type: Literal["function"]
    function: ToolFunction
