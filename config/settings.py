"""Settings. Everything an operator may change comes from the environment (django-environ);
nothing outside config/ reads the environment. Defaults give the embedded set-up: SQLite with
sqlite-vec, the local embedder and Celery tasks run in-process. The larger sections live in
config/settings_*.py modules and are named here one by one; Django reads them from here."""

from datetime import timedelta
from pathlib import Path

from config.env import ConfigurationError

# Django reads settings from this module only, so each section kept in a module of its own
# is brought in here by name (unused here, hence the noqa).
from config.settings_celery import (  # noqa: F401
    CELERY_BEAT_SCHEDULE_FILENAME,
    CELERY_BROKER_TRANSPORT_OPTIONS,
    CELERY_BROKER_URL,
    CELERY_RESULT_BACKEND,
    CELERY_TASK_ACKS_LATE,
    CELERY_TASK_ALWAYS_EAGER,
    CELERY_TASK_EAGER_PROPAGATES,
    CELERY_TASK_IGNORE_RESULT,
    CELERY_TASK_REJECT_ON_WORKER_LOST,
    CELERY_WORKER_PREFETCH_MULTIPLIER,
)
from config.settings_embeddings import (  # noqa: F401
    EMBEDDER,
    EMBEDDER_RUNTIME,
    EMBEDDING_API_KEY,
    EMBEDDING_BASE_URL,
    EMBEDDING_BATCH_THREADS,
    EMBEDDING_CACHE_DIR,
    EMBEDDING_DIMENSIONS,
    EMBEDDING_LOCAL_MODEL,
    EMBEDDING_MODEL,
    EMBEDDING_THREADS,
    EMBEDDING_TIMEOUT_SECONDS,
)
from config.settings_env import BASE_DIR, DEBUG, env
from config.settings_extraction import (  # noqa: F401
    CELERY_BEAT_SCHEDULE,
    CONSOLIDATION_INTERVAL_SECONDS,
    CONSOLIDATION_MAX_GROUP,
    CONSOLIDATION_SIMILARITY,
    CONSOLIDATION_STALE_DAYS,
    CONSOLIDATION_STALE_MAX_IMPORTANCE,
    EXTRACTION_CLAIM_SECONDS,
    EXTRACTION_DENSE_AVERAGE_CHARS,
    EXTRACTION_DENSE_MIN_USER_MESSAGES,
    EXTRACTION_DUPLICATE_SIMILARITY,
    EXTRACTION_IDLE_MIN_USER_MESSAGES,
    EXTRACTION_IDLE_MINUTES,
    EXTRACTION_LLM_ATTEMPTS,
    EXTRACTION_LLM_BACKOFF_SECONDS,
    EXTRACTION_MAX_MESSAGES_PER_RUN,
    EXTRACTION_SCAN_INTERVAL_SECONDS,
    EXTRACTION_USER_MESSAGES,
    EXTRACTION_WORK_USER_MESSAGES,
    LLM_API_KEY,
    LLM_BASE_URL,
    LLM_MODEL,
    LLM_TIMEOUT_SECONDS,
    MESSAGE_POSTED_HOOKS,
    REVIEW_SIMILAR_MIN_CALIBRATED,
    SAVE_SIMILAR_BATCH_MAX_ITEMS,
    SAVE_SIMILAR_EF_SEARCH,
    SAVE_SIMILAR_MAX,
)
from config.settings_logging import LOG_FORMAT, LOGGING  # noqa: F401
from config.settings_recall import (  # noqa: F401
    MEMORY_HINT_BUDGET_CHARS,
    MEMORY_HINT_MAX_SHARE,
    MEMORY_HINT_PINNED_SHARE,
    MEMORY_HINT_PROFILE_SHARE,
    MEMORY_PINNED_MAX,
    PROFILE_MEMORIES_MAX,
    PROFILE_REFRESH_INTERVAL_SECONDS,
    PROFILE_REFRESH_MIN_SECONDS,
    PROFILE_SUMMARY_MAX_CHARS,
    PROFILE_SUMMARY_MEMORIES,
    RECALL_ABOUT_USER_CAP,
    RECALL_ABOUT_USER_FLOOR,
    RECALL_ABOUT_USER_WEIGHT,
    RECALL_ADJUSTMENT_BAND,
    RECALL_BEAT_SCHEDULE,
    RECALL_CANDIDATES,
    RECALL_ENTITY_PASS,
    RECALL_ENTITY_WEIGHT,
    RECALL_FILTER_EXACT_MAX,
    RECALL_HINT_CLOSE_TO_BEST,
    RECALL_HINT_TOP_K,
    RECALL_HNSW_EF_SEARCH,
    RECALL_KEYWORD_FLOOR,
    RECALL_KEYWORD_PASS,
    RECALL_KEYWORD_ROW_BUDGET,
    RECALL_KEYWORD_WEIGHT,
    RECALL_LANGUAGE_OFFSET,
    RECALL_NEAR_BEST_BAND,
    RECALL_NEAR_BEST_FLOOR,
    RECALL_PARTITION_INDEX_INTERVAL_SECONDS,
    RECALL_PARTITION_INDEX_MIN_MEMORIES,
    RECALL_QUERY_READ_CHARS,
    RECALL_RECENCY_HALF_LIFE_DAYS,
    RECALL_SCOPE_BONUS,
    RECALL_SEARCH_TOP_K,
    RECALL_SIMILARITY_FLOOR,
    RECALL_SIMILARITY_SPAN,
    RECALL_VECTOR_SHARE,
    RECALL_WEIGHT_FREQUENCY,
    RECALL_WEIGHT_IMPORTANCE,
    RECALL_WEIGHT_RECENCY,
    RECALL_WEIGHT_RELEVANCE,
    VECTOR_MIRROR_MB,
)
from config.settings_retention import (  # noqa: F401
    RETENTION_BEAT_SCHEDULE,
    RETENTION_SWEEP_INTERVAL_SECONDS,
)
from config.settings_webhooks import (  # noqa: F401
    CELERY_TASK_ROUTES,
    WEBHOOK_ALLOW_PRIVATE,
    WEBHOOK_BEAT_SCHEDULE,
    WEBHOOK_CONCURRENCY,
    WEBHOOK_DISPATCH_INTERVAL_SECONDS,
    WEBHOOK_QUEUE,
    WEBHOOK_RETRY_SECONDS,
    WEBHOOK_TIMEOUT_SECONDS,
)

# The periodic work of every section, as Celery beat and the embedded scheduler run it.
CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    **RECALL_BEAT_SCHEDULE,
    **RETENTION_BEAT_SCHEDULE,
    **WEBHOOK_BEAT_SCHEDULE,
}

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigurationError(
            "SECRET_KEY must be set when DEBUG is off (or set DEBUG=true for local use)."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-debug-on"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# --- HTTPS (docs/operations.md, Production) -------------------------------------------------------
# Off by default so ./scripts/serve works over plain http, DEBUG on or off; the production
# environment in docs/operations.md turns each on, and `manage.py check --deploy` is clean
# with it.
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
    "webhooks",
    "ops",
]

MIDDLEWARE = [
    # Outermost: the request id, metrics and request log line cover every answer below.
    "ops.middleware.RequestObservationMiddleware",
    # Next, so that it also sees the errors other middleware answer (a disallowed Host).
    "rest.middleware.ApiJsonErrorsMiddleware",
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
        "options",
        "-c hnsw.iterative_scan=relaxed_order -c jit=off "
        f"-c hnsw.ef_search={RECALL_HNSW_EF_SEARCH}",
    )
# Keep a worker thread's connection between requests: opening one costs a PostgreSQL search
# some 12 ms. The health check (a ping before the first query of a request that reuses the
# connection) replaces one the database dropped (a restart, an idle timeout) instead of
# failing that request. 0 closes after every request.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=600, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# The keyword index's covering columns (memories.models.keyword_index) are PostgreSQL's; on
# SQLite Django builds the same indexes without them, as intended, and says so on every
# migrate unless told not to.
SILENCED_SYSTEM_CHECKS = ["models.W040"]
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
        "memories.accounts.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "rest.permissions.KeyHasScope",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest.parsers.SafeJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "rest.pagination.DataPagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "memories.api.schema_user_header.UserHeaderAutoSchema",
    "EXCEPTION_HANDLER": "rest.errors.exception_handler",
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
        "EntityKindEnum": "memories.models.EntityKind",
    },
}

# --- Input limits (docs/api.md) ---------------------------------------------------------------
MEMORY_KEY_MAX_LENGTH = 200
MEMORY_VALUE_MAX_LENGTH = env.int("MEMORY_VALUE_MAX_LENGTH", default=4000)
MEMORY_CATEGORY_MAX_LENGTH = 100
# A memory's metadata, as compact JSON (memories/filters/metadata.py).
MEMORY_METADATA_MAX_BYTES = env.int("MEMORY_METADATA_MAX_BYTES", default=8192)
MESSAGE_CONTENT_MAX_LENGTH = env.int("MESSAGE_CONTENT_MAX_LENGTH", default=32_000)
BULK_IDS_MAX = 500
# Items in one batch write (memories, messages).
BATCH_MAX_ITEMS = 500

# --- Health and metrics (docs/operations.md) ---------------------------------------------------
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
# Python's garbage collector runs between requests instead of pausing one in the middle
# (config/collect_between_requests.py); off, it runs on Python's own schedule.
GC_BETWEEN_REQUESTS = env.bool("GC_BETWEEN_REQUESTS", default=True)
# Probes and scrapes that reach gunicorn directly over http are not redirected to https.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
