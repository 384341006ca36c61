"""Extraction and consolidation proposals (docs/extraction.md), part of config.settings: the utility
model, when conversations are extracted, near-duplicate thresholds, and the periodic tasks
Celery beat runs."""

from config.env import ConfigurationError
from config.settings_celery import CELERY_BROKER_TRANSPORT_OPTIONS
from config.settings_embeddings import EMBEDDER, EMBEDDING_LOCAL_MODEL
from config.settings_env import env

# --- Utility model (extraction) ---------------------------------------------------------------
# Any OpenAI-compatible chat-completions endpoint (docs/extraction.md, Setting up the model).
# With LLM_BASE_URL and LLM_MODEL the LLM extracts and writes profile summaries; with neither,
# the rule extractor and the template do. LLM_API_KEY may stay empty for a local server.
LLM_BASE_URL = env.http_url(
    "LLM_BASE_URL", default="", example="https://api.openai.com/v1 or http://localhost:11434/v1"
)
LLM_API_KEY = env.str("LLM_API_KEY", default="").strip()
LLM_MODEL = env.str("LLM_MODEL", default="").strip()
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0)


def _names(names: list[str]) -> str:
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


# Half a configuration used to mean the rule extractor, silently: whoever set a key and a
# model without the address believed the LLM was extracting.
_llm_set = [
    name
    for name, value in (
        ("LLM_BASE_URL", LLM_BASE_URL),
        ("LLM_MODEL", LLM_MODEL),
        ("LLM_API_KEY", LLM_API_KEY),
    )
    if value
]
_llm_missing = [
    name for name, value in (("LLM_BASE_URL", LLM_BASE_URL), ("LLM_MODEL", LLM_MODEL)) if not value
]
if _llm_set and _llm_missing:
    _how = {
        "LLM_BASE_URL": "set LLM_BASE_URL to the provider's OpenAI-compatible address "
        "(https://api.openai.com/v1 for OpenAI, http://localhost:11434/v1 for Ollama)",
        "LLM_MODEL": "set LLM_MODEL to the name of the provider's chat model "
        "(gpt-4o-mini for OpenAI, llama3.1 for Ollama)",
    }
    raise ConfigurationError(
        f"{_names(_llm_set)} {'is' if len(_llm_set) == 1 else 'are'} set but "
        f"{_names(_llm_missing)} {'is' if len(_llm_missing) == 1 else 'are'} not: "
        f"{' and '.join(_how[name] for name in _llm_missing)}, or unset {_names(_llm_set)} "
        "to use the rule extractor"
    )

# --- Extraction (docs/extraction.md) --------------------------------------------------------------
# Conversation trigger policy for the automatic path (scanner, posted messages):
EXTRACTION_USER_MESSAGES = env.int("EXTRACTION_USER_MESSAGES", default=6)
EXTRACTION_IDLE_MINUTES = env.float("EXTRACTION_IDLE_MINUTES", default=30.0)
EXTRACTION_IDLE_MIN_USER_MESSAGES = env.int("EXTRACTION_IDLE_MIN_USER_MESSAGES", default=2)
EXTRACTION_DENSE_AVERAGE_CHARS = env.int("EXTRACTION_DENSE_AVERAGE_CHARS", default=400)
EXTRACTION_DENSE_MIN_USER_MESSAGES = env.int("EXTRACTION_DENSE_MIN_USER_MESSAGES", default=2)
# Work sessions: every this many new user messages, managed projects only.
EXTRACTION_WORK_USER_MESSAGES = env.int("EXTRACTION_WORK_USER_MESSAGES", default=10)
EXTRACTION_MAX_MESSAGES_PER_RUN = env.int("EXTRACTION_MAX_MESSAGES_PER_RUN", default=200)
EXTRACTION_LLM_ATTEMPTS = env.int("EXTRACTION_LLM_ATTEMPTS", default=3)
EXTRACTION_LLM_BACKOFF_SECONDS = env.float("EXTRACTION_LLM_BACKOFF_SECONDS", default=2.0)
# Cosine similarities mean different things per model: multilingual-e5-small gives "Likes
# green tea" and "Likes black coffee" 0.925 and "Lives in Lisbon" and "Lives in Porto" 0.947,
# and true rewordings 0.96-0.98; all-MiniLM-L6-v2 (and remote models such as OpenAI's)
# spread them wider. Hence per-model defaults here and for CONSOLIDATION_SIMILARITY.
_E5_SIMILARITIES = EMBEDDER == "local" and EMBEDDING_LOCAL_MODEL == "multilingual-e5-small"
EXTRACTION_DUPLICATE_SIMILARITY = env.float(
    "EXTRACTION_DUPLICATE_SIMILARITY", default=0.96 if _E5_SIMILARITIES else 0.92
)
# A write answers, as `similar_ids`, up to this many current memories of its scope that are
# near duplicates of it (EXTRACTION_DUPLICATE_SIMILARITY); 0 skips the look-up.
SAVE_SIMILAR_MAX = env.int("SAVE_SIMILAR_MAX", default=3)
# ... for batches of at most this many items (one search per item); larger batches, bulk
# loads, answer similar_ids null (not looked up).
SAVE_SIMILAR_BATCH_MAX_ITEMS = env.int("SAVE_SIMILAR_BATCH_MAX_ITEMS", default=20)
# PostgreSQL: the candidates a partition's HNSW graph keeps while looking for them (recall
# keeps RECALL_HNSW_EF_SEARCH). A near duplicate is among the very closest, which a narrow
# walk finds: on the benchmark's 100,000-memory partition, each of 200 texts at cosine 0.97
# of a stored one found it first at 10 as at 40, in 2.5 ms instead of 4.2.
SAVE_SIMILAR_EF_SEARCH = env.int("SAVE_SIMILAR_EF_SEARCH", default=10, minimum=1)
EXTRACTION_CLAIM_SECONDS = env.int("EXTRACTION_CLAIM_SECONDS", default=600)
# CELERY_VISIBILITY_TIMEOUT_SECONDS, read in config/settings_celery.py.
_visibility_timeout = CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
if _visibility_timeout <= EXTRACTION_CLAIM_SECONDS:
    # Else a task redelivered after its worker died finds its run still claimed, leaves it,
    # and the run stays `running` for good.
    raise ConfigurationError(
        f"CELERY_VISIBILITY_TIMEOUT_SECONDS={_visibility_timeout} must be longer than "
        f"EXTRACTION_CLAIM_SECONDS={EXTRACTION_CLAIM_SECONDS}: a task whose worker died is "
        "delivered again after the first and may take its run over only after the second"
    )
EXTRACTION_SCAN_INTERVAL_SECONDS = env.int("EXTRACTION_SCAN_INTERVAL_SECONDS", default=300)
CELERY_BEAT_SCHEDULE = {
    "scan-extractions": {
        "task": "extraction.tasks.scan_extractions_task",
        "schedule": EXTRACTION_SCAN_INTERVAL_SECONDS,
    },
    # Erasures a crash stopped half-way (their users are hidden already): memories.erasure.
    "finish-erasures": {
        "task": "memories.tasks.finish_erasures_task",
        "schedule": env.int("ERASURE_FINISH_INTERVAL_SECONDS", default=600, minimum=1),
    },
}
# --- Consolidation proposals (docs/extraction.md) -------------------------------------------------
# Active memories of one user and scope at least this similar (cosine) are proposed as a merge;
# one not recalled or updated for this many days (0: never), and not more important than
# CONSOLIDATION_STALE_MAX_IMPORTANCE, as an archival. Reviewers decide; nothing changes before.
CONSOLIDATION_SIMILARITY = env.float(
    "CONSOLIDATION_SIMILARITY", default=0.955 if _E5_SIMILARITIES else 0.9
)
# The review pages show beside a candidate the user's memories whose similarity, calibrated
# as recall's (memories/recall/calibration.py: standard deviations above the candidate's
# similarity to ordinary memories), reaches this: one value for every model. Measured on 39
# memories of one made-up user (docs/extraction.md, "Similar memories"): at 2.0, 1.8% of the
# pairs on unrelated subjects pass with multilingual-e5-small (2.3% with MiniLM) and 86% of
# the restatements of one fact. It replaces REVIEW_SIMILAR_MIN_SIMILARITY, a raw cosine.
if env.str("REVIEW_SIMILAR_MIN_SIMILARITY", default=""):
    raise ConfigurationError(
        "REVIEW_SIMILAR_MIN_SIMILARITY (a raw cosine) is no longer read: set "
        "REVIEW_SIMILAR_MIN_CALIBRATED (standard deviations above ordinary memories; 2.0 by "
        "default) instead."
    )
REVIEW_SIMILAR_MIN_CALIBRATED = env.float("REVIEW_SIMILAR_MIN_CALIBRATED", default=2.0)
CONSOLIDATION_STALE_DAYS = env.int("CONSOLIDATION_STALE_DAYS", default=180, minimum=0)
CONSOLIDATION_STALE_MAX_IMPORTANCE = env.float("CONSOLIDATION_STALE_MAX_IMPORTANCE", default=0.8)
CONSOLIDATION_MAX_GROUP = env.int("CONSOLIDATION_MAX_GROUP", default=5, minimum=2)
# How often Celery beat runs it (0: never; manage.py consolidate_memories runs it by hand).
CONSOLIDATION_INTERVAL_SECONDS = env.int("CONSOLIDATION_INTERVAL_SECONDS", default=86400, minimum=0)
if CONSOLIDATION_INTERVAL_SECONDS > 0:
    CELERY_BEAT_SCHEDULE["consolidate-memories"] = {
        "task": "memories.tasks.consolidate_memories_task",
        "schedule": CONSOLIDATION_INTERVAL_SECONDS,
    }
# Called (by dotted path) as hook(kind="topic"|"work_session", source_id=...) once per post
# that carried user messages (one message or a batch), after the write commits. A hook may
# return the extraction it started as {"task_id", "status"} (the batch answer's `extraction`)
# or None; one that raises is logged and fails nothing.
MESSAGE_POSTED_HOOKS = ["extraction.triggers.message_posted"]
