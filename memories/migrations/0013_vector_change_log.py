"""SQLite: the change log that keeps each process's in-memory vector mirrors in step with the
sqlite-vec table (memories/recall/vector_store/sqlite_mirror.py). Vectors written before it
are read when a mirror first loads its partition, so nothing is back-filled. Nothing on
PostgreSQL."""

from django.db import migrations


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        from memories.recall.vector_store.sqlite_mirror import create_changes_sql

        for statement in create_changes_sql():
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        from memories.recall.vector_store.sqlite_mirror import CHANGES

        schema_editor.execute(f"DROP TABLE IF EXISTS {CHANGES}")


class Migration(migrations.Migration):
    dependencies = [("memories", "0012_memory_provenance")]
    operations = [migrations.RunPython(create, drop)]
