"""Django set-up for a benchmark worker: the test settings pointed at a throwaway database,
then `migrate`, as the test runner would do. Must run before any app module is imported."""

import os


def setup(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings_test"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    name = str(settings.DATABASES["default"]["NAME"])
    if name.endswith("memory.sqlite3") and "bench" not in name:
        raise RuntimeError(f"refusing to benchmark on {name}")
    call_command("migrate", verbosity=0, interactive=False)


def database_info() -> dict:
    """Versions of the database and its vector extension (and PostgreSQL's buffer size), for
    the results file."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            cursor.execute("SHOW shared_buffers")
            shared_buffers = cursor.fetchone()[0]
            return {
                "vendor": "postgresql",
                "version": version,
                "pgvector": row and row[0],
                "shared_buffers": shared_buffers,
            }
        cursor.execute("SELECT sqlite_version(), vec_version()")
        sqlite_version, vec_version = cursor.fetchone()
        return {"vendor": "sqlite", "version": sqlite_version, "sqlite_vec": vec_version}
