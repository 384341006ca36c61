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
    """Versions of the database and its vector extension, for the results file; on PostgreSQL
    also its buffer size and how the HNSW graphs there were built and are searched (the
    options of each partition graph, which keeps those of its build, and hnsw.ef_search)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            cursor.execute("SHOW shared_buffers")
            shared_buffers = cursor.fetchone()[0]
            # NULL, not an error, on a connection that neither set it nor loaded pgvector yet.
            cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
            ef_search = cursor.fetchone()[0]
            return {
                "vendor": "postgresql",
                "version": version,
                "pgvector": row and row[0],
                "shared_buffers": shared_buffers,
                "hnsw": {
                    "ef_search": ef_search and int(ef_search),
                    "graphs": _graph_builds(cursor),
                },
            }
        cursor.execute("SELECT sqlite_version(), vec_version()")
        sqlite_version, vec_version = cursor.fetchone()
        return {"vendor": "sqlite", "version": sqlite_version, "sqlite_vec": vec_version}


def _graph_builds(cursor) -> list[dict]:
    """The distinct build options (m, ef_construction) of the partition graphs, with how many
    graphs have each."""
    from memories.recall.vector_store.partition_indexes import NAME_PREFIX, is_partition_index_name

    cursor.execute(
        "SELECT c.relname, coalesce(c.reloptions, '{}') FROM pg_class c "
        "JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname LIKE %s",
        [NAME_PREFIX.replace("_", r"\_") + "%"],
    )
    builds: dict[tuple, int] = {}
    for name, options in cursor.fetchall():
        if is_partition_index_name(name):
            pairs = dict(option.split("=", 1) for option in options)
            build = (int(pairs.get("m", 16)), int(pairs.get("ef_construction", 64)))
            builds[build] = builds.get(build, 0) + 1
    return [
        {"m": m, "ef_construction": efc, "graphs": count}
        for (m, efc), count in sorted(builds.items())
    ]
