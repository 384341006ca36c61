"""Recall and the hint (docs/recall.md), part of config.settings. Defaults tuned on the
LOCOMO dev set: docs/benchmarks.md."""

from config.env import ConfigurationError
from config.settings_embeddings import EMBEDDER, EMBEDDING_LOCAL_MODEL
from config.settings_env import env

RECALL_WEIGHT_RELEVANCE = env.float("RECALL_WEIGHT_RELEVANCE", default=0.55)
RECALL_WEIGHT_IMPORTANCE = env.float("RECALL_WEIGHT_IMPORTANCE", default=0.15)
RECALL_WEIGHT_RECENCY = env.float("RECALL_WEIGHT_RECENCY", default=0.15)
# 0: chosen with one LOCOMO dev conversation left out, in every fold and on both memory texts
# (docs/benchmarks.md, "Settings tried"): access counts recalled what was recalled before,
# at the cost of what a question is about (+1.4 points recall@5, +1.0 recall@10 at 0 against
# 0.10). The part stays in score_parts; a product that wants popularity sets a weight.
RECALL_WEIGHT_FREQUENCY = env.float("RECALL_WEIGHT_FREQUENCY", default=0.0)
# How far importance, recency and popularity move a memory's score: within ±this share of its
# relevance, so they order memories of about the same evidence and never lift one past a
# memory with clearly stronger evidence (memories/recall/scoring.py). The three weights above
# are their shares of the band; RECALL_WEIGHT_RELEVANCE only scales every score.
RECALL_ADJUSTMENT_BAND = env.float("RECALL_ADJUSTMENT_BAND", default=0.15)
if not 0 <= RECALL_ADJUSTMENT_BAND < 1:
    raise ConfigurationError(
        f"RECALL_ADJUSTMENT_BAND={RECALL_ADJUSTMENT_BAND}: expected a share from 0, below 1"
    )
RECALL_RECENCY_HALF_LIFE_DAYS = env.float("RECALL_RECENCY_HALF_LIFE_DAYS", default=30.0)
# Relevance (memories/recall/scoring.py): a candidate counts when
#   calibrated similarity + RECALL_ABOUT_USER_WEIGHT · min(about_user, RECALL_ABOUT_USER_CAP)
#   + RECALL_KEYWORD_WEIGHT · keyword evidence  >=  RECALL_SIMILARITY_FLOOR,
# or when the question is about the user (about_user >= RECALL_ABOUT_USER_FLOOR) and its
# calibrated similarity reaches RECALL_NEAR_BEST_FLOOR within RECALL_NEAR_BEST_BAND of the
# question's best (vague requests). RECALL_ABOUT_USER_CAP (none by default) caps the
# classifier's bonus: 1 returns fewer memories for questions plainly about the user and keeps
# fewer of the memories vague requests are about (docs/benchmarks.md). The calibrated
# similarity is the cosine similarity in standard deviations above the question's similarity
# to a fixed background of ordinary memories; about_user the log-odds that the question is
# about the user
# (memories/recall/calibration.py); keyword evidence the share of the query's word weight a
# memory matched (0..1). Without an embedder, keyword evidence alone decides
# (RECALL_KEYWORD_FLOOR). Relevance ranks by the calibrated similarity divided by
# RECALL_SIMILARITY_SPAN (capped at 1). Fit per local model on the tuning part of
# tests/data/vague_questions.json with LOCOMO dev recall kept (docs/benchmarks.md,
# "Relevance"); a remote embedder (EMBEDDER=openai) starts from the default model's values.
# fmt: off
_RELEVANCE_DEFAULTS = {
    "multilingual-e5-small": {
        "floor": 2.0, "about_user_weight": 1.5, "keyword_weight": 1.0, "about_user_floor": 0.5,
        "about_user_cap": float("inf"), "near_best": 0.0, "band": 1.0, "keyword": 0.3, "span": 10.0,
        "vector_share": 0.7, "keyword_pass": 0.8, "language_offset": 0.5,
    },
    "all-MiniLM-L6-v2": {
        "floor": 3.0, "about_user_weight": 1.5, "keyword_weight": 1.0, "about_user_floor": 0.5,
        "about_user_cap": float("inf"), "near_best": 0.0, "band": 1.0, "keyword": 0.3, "span": 8.0,
        "vector_share": 0.6, "keyword_pass": 0.8, "language_offset": 0.0,
    },
}
# fmt: on
_relevance = _RELEVANCE_DEFAULTS[
    EMBEDDING_LOCAL_MODEL if EMBEDDER == "local" else "multilingual-e5-small"
]
# Share of the vector half in relevance; the keyword half gets the rest.
RECALL_VECTOR_SHARE = env.float("RECALL_VECTOR_SHARE", default=_relevance["vector_share"])
RECALL_SIMILARITY_FLOOR = env.float("RECALL_SIMILARITY_FLOOR", default=_relevance["floor"])
RECALL_ABOUT_USER_WEIGHT = env.float(
    "RECALL_ABOUT_USER_WEIGHT", default=_relevance["about_user_weight"]
)
RECALL_KEYWORD_WEIGHT = env.float("RECALL_KEYWORD_WEIGHT", default=_relevance["keyword_weight"])
RECALL_ABOUT_USER_FLOOR = env.float(
    "RECALL_ABOUT_USER_FLOOR", default=_relevance["about_user_floor"]
)
RECALL_ABOUT_USER_CAP = env.float("RECALL_ABOUT_USER_CAP", default=_relevance["about_user_cap"])
RECALL_NEAR_BEST_FLOOR = env.float("RECALL_NEAR_BEST_FLOOR", default=_relevance["near_best"])
RECALL_NEAR_BEST_BAND = env.float("RECALL_NEAR_BEST_BAND", default=_relevance["band"])
RECALL_KEYWORD_FLOOR = env.float("RECALL_KEYWORD_FLOOR", default=_relevance["keyword"])
RECALL_KEYWORD_PASS = env.float("RECALL_KEYWORD_PASS", default=_relevance["keyword_pass"])
RECALL_SIMILARITY_SPAN = env.float("RECALL_SIMILARITY_SPAN", default=_relevance["span"])
# The share (0..1) of a language's pull taken off a memory in another language than the
# question (memories/recall/calibration.py): a multilingual model puts a question nearer to
# every text of its own language. 0.5 for multilingual-e5-small, chosen on the tuning part
# (docs/benchmarks.md); 0 for all-MiniLM-L6-v2, which reads English only.
RECALL_LANGUAGE_OFFSET = env.float(
    "RECALL_LANGUAGE_OFFSET", default=_relevance["language_offset"]
)
if not 0 <= RECALL_LANGUAGE_OFFSET <= 1:
    raise ConfigurationError(f"RECALL_LANGUAGE_OFFSET={RECALL_LANGUAGE_OFFSET}: expected 0..1")
if RECALL_SIMILARITY_SPAN <= 0:
    raise ConfigurationError(f"RECALL_SIMILARITY_SPAN={RECALL_SIMILARITY_SPAN}: expected > 0")
# The share a memory of a more specific scope adds to its score (0.10: a session memory scores
# 10% more than the same evidence in the user scope), so it never passes clearly stronger
# evidence either (memories/recall/scoring.py).
RECALL_SCOPE_BONUS = {
    "session": env.float("RECALL_SCOPE_BONUS_SESSION", default=0.10),
    "project": env.float("RECALL_SCOPE_BONUS_PROJECT", default=0.08),
    "persona_user": env.float("RECALL_SCOPE_BONUS_PERSONA_USER", default=0.06),
    "persona": env.float("RECALL_SCOPE_BONUS_PERSONA", default=0.03),
    "user": env.float("RECALL_SCOPE_BONUS_USER", default=0.0),
}
# How many candidates each half (vector, keyword) brings before scoring.
RECALL_CANDIDATES = env.int("RECALL_CANDIDATES", default=50)
# A filter matching at most this many of the scopes' memories is searched among them alone
# (each one's distance measured); past it, among the nearest (memories/recall/candidates.py).
RECALL_FILTER_EXACT_MAX = env.int("RECALL_FILTER_EXACT_MAX", default=20_000)
# SQLite: each process keeps the active vectors of the partitions it searches in memory, up to
# this many MB (least recently searched dropped first), and searches them with one matrix
# product: the same exact answer as sqlite-vec's scan, ~6x faster (100,000 vectors of 384
# dimensions take 150 MB). A partition larger than this is searched by sqlite-vec; 0 turns
# the mirror off. memories/recall/vector_store/sqlite_mirror.py.
VECTOR_MIRROR_MB = env.int("VECTOR_MIRROR_MB", default=512, minimum=0)
# The keyword half looks memories up by the rarest query words whose memory counts (in the
# caller's own partitions) add up to at most this many rows, and ranks what it found by all
# the words. Ranking costs time per matching row, and a word most memories hold says little
# about which one is meant; see memories/recall/bm25.py and docs/benchmarks.md.
RECALL_KEYWORD_ROW_BUDGET = env.int("RECALL_KEYWORD_ROW_BUDGET", default=500)
# How many results recall gives when the request has no top_k: GET /api/memories/search, and
# what a model is handed (POST /api/memories/context and the memory_context and memory_recall
# tools). Fixed, not read from the environment: the endpoints' top_k bounds (50, 20) hold them.
RECALL_SEARCH_TOP_K = 10
RECALL_HINT_TOP_K = 5
# The hint holds the recalled memories whose relevance is at least this share of the best
# one's: a request one memory serves gets that memory, not four more because the budget has
# room (0: every memory recall returns). Chosen on the tuning part of the relevance set's
# multi-need requests (docs/benchmarks.md).
RECALL_HINT_CLOSE_TO_BEST = env.float("RECALL_HINT_CLOSE_TO_BEST", default=0.2)
if not 0 <= RECALL_HINT_CLOSE_TO_BEST <= 1:
    raise ConfigurationError(
        f"RECALL_HINT_CLOSE_TO_BEST={RECALL_HINT_CLOSE_TO_BEST}: expected a share from 0 to 1"
    )
MEMORY_HINT_BUDGET_CHARS = env.int("MEMORY_HINT_BUDGET_CHARS", default=6000)
# No memory line of the hint is longer than this share of the budget (a longer value is cut
# with an ellipsis in the hint only), so one long memory cannot crowd out the others.
MEMORY_HINT_MAX_SHARE = env.float("MEMORY_HINT_MAX_SHARE", default=0.25)
if not 0 < MEMORY_HINT_MAX_SHARE <= 1:
    raise ConfigurationError(
        f"MEMORY_HINT_MAX_SHARE={MEMORY_HINT_MAX_SHARE}: expected a share above 0, at most 1"
    )
# Entities a query names (memories/recall/entities.py): their memories are relevant when the
# evidence reaches RECALL_ENTITY_PASS (a named entity 1, one of a named group 0.8), and
# the evidence fills RECALL_ENTITY_WEIGHT of the relevance similarity and keywords left.
RECALL_ENTITY_WEIGHT = env.float("RECALL_ENTITY_WEIGHT", default=0.6)
RECALL_ENTITY_PASS = env.float("RECALL_ENTITY_PASS", default=0.5)
for _name, _value in (
    ("RECALL_ENTITY_WEIGHT", RECALL_ENTITY_WEIGHT),
    ("RECALL_ENTITY_PASS", RECALL_ENTITY_PASS),
):
    if not 0 <= _value <= 1:
        raise ConfigurationError(f"{_name}={_value}: expected a share from 0 to 1")
# Pinned memories: at most this many current ones per end user (or per persona, for persona
# memories), a 400 naming `pinned` beyond; every context hint starts with them, within this
# share of the budget (the rest is for what recall ranks).
MEMORY_PINNED_MAX = env.int("MEMORY_PINNED_MAX", default=20)
if MEMORY_PINNED_MAX < 0:
    raise ConfigurationError(f"MEMORY_PINNED_MAX={MEMORY_PINNED_MAX}: expected 0 or more")
MEMORY_HINT_PINNED_SHARE = env.float("MEMORY_HINT_PINNED_SHARE", default=0.5)
if not 0 < MEMORY_HINT_PINNED_SHARE <= 1:
    raise ConfigurationError(
        f"MEMORY_HINT_PINNED_SHARE={MEMORY_HINT_PINNED_SHARE}: expected a share above 0, at most 1"
    )
# The profile (memories/profiles): its summary is at most this many characters, written from
# the pinned memories, the entities and the most important current memories (at most
# PROFILE_SUMMARY_MEMORIES of them); GET /api/me/profile lists at most PROFILE_MEMORIES_MAX
# current memories. Every PROFILE_REFRESH_INTERVAL_SECONDS a periodic task writes the summary
# of each user whose memories or entities changed since its last run (0: never).
# Context with "profile": true gives the summary at most MEMORY_HINT_PROFILE_SHARE of the budget.
PROFILE_SUMMARY_MAX_CHARS = env.int("PROFILE_SUMMARY_MAX_CHARS", default=600)
PROFILE_SUMMARY_MEMORIES = env.int("PROFILE_SUMMARY_MEMORIES", default=30)
PROFILE_MEMORIES_MAX = env.int("PROFILE_MEMORIES_MAX", default=200)
PROFILE_REFRESH_INTERVAL_SECONDS = env.float("PROFILE_REFRESH_INTERVAL_SECONDS", default=30.0)
# A user whose summary was written less than this long ago waits for a later sweep: a user who
# changes all the time (an agent saving on every turn) is written every few minutes, not on
# every sweep, for reading a large user's profile takes a few hundred milliseconds of a worker
# that serves requests too (the embedded default). 0: on every sweep that finds a change.
PROFILE_REFRESH_MIN_SECONDS = env.float("PROFILE_REFRESH_MIN_SECONDS", default=240.0)
for _name, _value in (
    ("PROFILE_SUMMARY_MAX_CHARS", PROFILE_SUMMARY_MAX_CHARS),
    ("PROFILE_SUMMARY_MEMORIES", PROFILE_SUMMARY_MEMORIES),
    ("PROFILE_MEMORIES_MAX", PROFILE_MEMORIES_MAX),
):
    if _value < 1:
        raise ConfigurationError(f"{_name}={_value}: expected 1 or more")
for _name, _value in (
    ("PROFILE_REFRESH_INTERVAL_SECONDS", PROFILE_REFRESH_INTERVAL_SECONDS),
    ("PROFILE_REFRESH_MIN_SECONDS", PROFILE_REFRESH_MIN_SECONDS),
):
    if _value < 0:
        raise ConfigurationError(f"{_name}={_value}: expected 0 or more")
MEMORY_HINT_PROFILE_SHARE = env.float("MEMORY_HINT_PROFILE_SHARE", default=0.25)
if not 0 < MEMORY_HINT_PROFILE_SHARE <= 1:
    raise ConfigurationError(
        f"MEMORY_HINT_PROFILE_SHARE={MEMORY_HINT_PROFILE_SHARE}: expected a share above 0, "
        "at most 1"
    )
# What recall reads of a query: its last this many characters, from a word on. A context
# query may be a whole message; the question is usually at its end (memories/recall/query.py).
# 500: a few sentences. A text's vector is the mean of its tokens (multilingual-e5-small) or
# of its first 256 tokens (all-MiniLM-L6-v2): the longer the part read, the less of the vector
# is the question. With 1000, a question ending 20,000 characters about something else was
# 3.05 background spreads from its memory and read as not about the user; with 500, 3.5 and
# undecided; with 2000 MiniLM lost it entirely.
RECALL_QUERY_READ_CHARS = env.int("RECALL_QUERY_READ_CHARS", default=500, minimum=1)
# PostgreSQL: how wide the HNSW search is (pgvector's hnsw.ef_search, the candidates it keeps
# while walking the graph), set on every connection. Wider finds more of the exact nearest for
# users with many memories, at some KNN time (docs/benchmarks.md, "Many users": the sweep).
RECALL_HNSW_EF_SEARCH = env.int("RECALL_HNSW_EF_SEARCH", default=40, minimum=1)
if RECALL_HNSW_EF_SEARCH > 1000:
    raise ConfigurationError(
        f"RECALL_HNSW_EF_SEARCH={RECALL_HNSW_EF_SEARCH}: pgvector allows at most 1000"
    )
# PostgreSQL: a partition (one user's memories of one scope) with at least this many vectors
# gets an HNSW graph of its own (memories/recall/vector_store/partition_indexes.py); below
# half of it, it loses it. Smaller partitions are searched exactly or on the global graph.
# The periodic task that builds them runs every RECALL_PARTITION_INDEX_INTERVAL_SECONDS
# (0: never; manage.py index_partitions runs it by hand).
RECALL_PARTITION_INDEX_MIN_MEMORIES = env.int(
    "RECALL_PARTITION_INDEX_MIN_MEMORIES", default=10_000, minimum=2
)
RECALL_PARTITION_INDEX_INTERVAL_SECONDS = env.int(
    "RECALL_PARTITION_INDEX_INTERVAL_SECONDS", default=600, minimum=0
)
RECALL_BEAT_SCHEDULE = {}
if PROFILE_REFRESH_INTERVAL_SECONDS > 0:
    RECALL_BEAT_SCHEDULE["write-profile-summaries"] = {
        "task": "memories.tasks.refresh_profiles_task",
        "schedule": PROFILE_REFRESH_INTERVAL_SECONDS,
    }
if RECALL_PARTITION_INDEX_INTERVAL_SECONDS > 0:
    RECALL_BEAT_SCHEDULE["index-large-partitions"] = {
        "task": "memories.tasks.index_partitions_task",
        "schedule": RECALL_PARTITION_INDEX_INTERVAL_SECONDS,
    }
