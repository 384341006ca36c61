"""Test overrides: the same settings as production, with a throwaway secret and fast hashing.
DATABASE_URL picks the database (SQLite by default; the test command runs PostgreSQL too)."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.pop("CELERY_BROKER_URL", None)

from config.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Login lockouts and throttles count in the cache, which tests/conftest.py empties around
# every test: always this process's memory, never a Redis that CACHE_URL might name.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

if DATABASES["default"]["ENGINE"] == "memories.sqlite_backend":  # noqa: F405
    # One file per test process, so two runs (or a run and a dev server) never share it.
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": str(BASE_DIR / "var" / f"test-{os.getpid()}.sqlite3")  # noqa: F405
    }
