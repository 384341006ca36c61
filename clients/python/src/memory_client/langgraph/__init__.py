"""A LangGraph store (langgraph.store.base.BaseStore) backed by the memory service, so a graph's
long-term memory is the service's: recalled with scores, reviewed, exported, erased with the
user. Needs the `langgraph` extra.

How a namespace maps to the service (README.md of this package, "The LangGraph store"):

- ``(user_id, *path)``: the end user `user_id` (sent as X-User-Id), user scope.
- ``(user_id, "project:<project id>", *path)``: that project's scope (a project of the user,
  made with MemoryClient.create_project); ``(user_id, "persona:<persona id>", *path)``: the
  user's memories with that persona (persona_user scope). ``(user_id, "topic:<topic id>",
  ...)`` names the session memories extraction draws from a conversation: read only.
- `path`, the labels after those, is the memory's `category` (joined with "."). Every
  distinct namespace and key is its own memory and reads back exactly: plain names (lowercase
  ASCII letters and digits) are stored as the path and key joined with "." ("profile.diet"),
  any other name escaped and tagged with a digest of the exact names ("Profile.Diet #…"),
  which the service's key comparison (case folded, punctuation as spaces) keeps apart; see
  memory_key_of. A memory saved otherwise (by hand, by extraction) whose key does not start
  with its category sits at the root of its scope, under its key.
- A value (a dict) is stored as its JSON text, except ``{"value": "<text>"}``, stored as the
  text itself; a memory whose value is not a JSON object reads back as ``{"value": text}``.
  So a get after a put answers the same dict, and memories written elsewhere read naturally.
  The value is also kept as the memory's ``metadata["langgraph"]`` when it fits the
  service's rules for metadata (key names without "." and not integers, 5 levels, 8192
  bytes): a copy for filters only, never read back (see metadata_of).
- `filter` reads as LangGraph's InMemoryStore reads it (see matches). The service applies
  what of it has a sure equivalent in its own filter language to that metadata, so a search
  fetches (and a query ranks) only the items that may match; every item fetched is still
  checked with matches. Items without that metadata (an older adapter's, a value that did not
  fit, memories saved elsewhere) always pass the service's part (see service_filter). A
  value edited outside the store (the review pages, the API) keeps the metadata of its last
  put until it is put again.
- A search with a query ranks the namespace's memories by the service's score, as
  InMemoryStore ranks every item by similarity: it asks with ``min_relevance=0`` (the best 50
  whatever the relevance gate says), so ``search(ns, query="food")`` finds a memory its words
  stand in, and a weak one still comes last rather than not at all.

Values are at most 4000 characters. Every value is embedded (PutOp.index is not needed, and
index=False is not honoured); TTLs are not supported."""

import importlib

try:  # before the modules below need it, to say what to install
    importlib.import_module("langgraph.store.base")
except ImportError as missing:
    raise ImportError(
        "memory_client.langgraph needs LangGraph: pip install 'memory-service-client[langgraph]'"
    ) from missing

from memory_client.langgraph.filters import check_filter, matches, service_filter
from memory_client.langgraph.metadata import METADATA_KEY, metadata_of, same_json
from memory_client.langgraph.names import (
    CARRIER_LABELS,
    CATEGORY_MAX_LENGTH,
    KEY_MAX_LENGTH,
    NAMES_FIELD,
    PAGE_SIZE,
    PLAIN_NAME,
    READ_ONLY_SCOPES,
    TAGGED_KEY,
    Place,
    Stored,
    decode_value,
    encode_value,
    item_of,
    located,
    memory_key_of,
    names_fit,
    read_memory,
)
from memory_client.langgraph.store import RECALL_TOP_K, MemoryStore, Plan, Step

__all__ = [
    "CARRIER_LABELS",
    "CATEGORY_MAX_LENGTH",
    "KEY_MAX_LENGTH",
    "METADATA_KEY",
    "NAMES_FIELD",
    "PAGE_SIZE",
    "PLAIN_NAME",
    "READ_ONLY_SCOPES",
    "RECALL_TOP_K",
    "TAGGED_KEY",
    "MemoryStore",
    "Place",
    "Plan",
    "Step",
    "Stored",
    "check_filter",
    "decode_value",
    "encode_value",
    "item_of",
    "located",
    "matches",
    "memory_key_of",
    "metadata_of",
    "names_fit",
    "read_memory",
    "same_json",
    "service_filter",
]
