"""Keyword search: an FTS5 table on SQLite; a generated tsvector column with a GIN index on
PostgreSQL (kept current by PostgreSQL itself)."""

from django.db import migrations

SQLITE_CREATE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS fts_memories USING fts5("
    "part, text, memory_id UNINDEXED, status UNINDEXED, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
POSTGRES_CREATE = [
    "ALTER TABLE memories_memory ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', key || ' ' || value)) STORED",
    "CREATE INDEX IF NOT EXISTS memory_search_vector_gin ON memories_memory "
    "USING gin (search_vector)",
]


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        schema_editor.execute(SQLITE_CREATE)
    elif vendor == "postgresql":
        for statement in POSTGRES_CREATE:
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        schema_editor.execute("DROP TABLE IF EXISTS fts_memories")
    elif vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS memory_search_vector_gin")
        schema_editor.execute("ALTER TABLE memories_memory DROP COLUMN IF EXISTS search_vector")


class Migration(migrations.Migration):
    dependencies = [("memories", "0003_default_config")]
    operations = [migrations.RunPython(create, drop)]
