"""A memory's metadata (issue 46). Filters on it are answered from an index on each
database (memories/filters/compile.py):
- PostgreSQL: a GIN index of it (jsonb_path_ops), for the containment that an equality on
  metadata is written as;
- SQLite: a table of each memory's top-level metadata values (key, JSON type, value), kept
  by triggers on every write of the memory table (saves, edits, imports, bulk loads and
  erasure alike), indexed by key and value."""

from django.db import migrations, models

SQLITE_METADATA_VALUES = [
    "CREATE TABLE memory_metadata_values ("
    "memory_id char(32) NOT NULL, key text NOT NULL, kind text NOT NULL, atom)",
    "CREATE INDEX memory_metadata_values_lookup ON memory_metadata_values (key, atom)",
    "CREATE INDEX memory_metadata_values_memory ON memory_metadata_values (memory_id)",
    "CREATE TRIGGER memory_metadata_insert AFTER INSERT ON memories_memory "
    "WHEN NEW.metadata <> '{}' BEGIN "
    "INSERT INTO memory_metadata_values (memory_id, key, kind, atom) "
    "SELECT NEW.id, key, type, atom FROM json_each(NEW.metadata); END",
    "CREATE TRIGGER memory_metadata_update AFTER UPDATE OF metadata ON memories_memory BEGIN "
    "DELETE FROM memory_metadata_values WHERE memory_id = OLD.id; "
    "INSERT INTO memory_metadata_values (memory_id, key, kind, atom) "
    "SELECT NEW.id, key, type, atom FROM json_each(NEW.metadata); END",
    "CREATE TRIGGER memory_metadata_delete AFTER DELETE ON memories_memory BEGIN "
    "DELETE FROM memory_metadata_values WHERE memory_id = OLD.id; END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS memory_metadata_delete",
    "DROP TRIGGER IF EXISTS memory_metadata_update",
    "DROP TRIGGER IF EXISTS memory_metadata_insert",
    "DROP TABLE IF EXISTS memory_metadata_values",
]


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX memory_metadata_gin ON memories_memory "
            "USING gin (metadata jsonb_path_ops)"
        )
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_METADATA_VALUES:
            schema_editor.execute(statement)


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS memory_metadata_gin")
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("memories", "0023_profiles")]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="metadata",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(create_indexes, drop_indexes),
    ]
