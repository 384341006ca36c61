"""SQLite: the vec0 table rebuilt with small chunks (memories/recall/vector_store/sqlite_vec.py,
CHUNK_SIZE): a table made before kept 1,024 vector slots for every end user with a vector.
The rows go through a plain table and back; every process's mirrors then reload. Nothing on
PostgreSQL, nor for a table made with chunk_size already."""

import re

from django.db import migrations

COPY = "vec_memory_embeddings_copy"


def rebuild(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    from memories.recall.vector_store.sqlite_mirror import ALL_PARTITIONS, log_changes
    from memories.recall.vector_store.sqlite_vec import TABLE, create_table_sql

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [TABLE])
        row = cursor.fetchone()
        if row is None or "chunk_size" in row[0].lower():
            return
        dimensions = int(re.search(r"float\[(\d+)\]", row[0], re.IGNORECASE).group(1))
        cursor.execute(f"DROP TABLE IF EXISTS {COPY}")
        cursor.execute(
            f"CREATE TABLE {COPY} AS SELECT memory_id, partition, status, embedding FROM {TABLE}"
        )
        cursor.execute(f"DROP TABLE {TABLE}")
        cursor.execute(create_table_sql(dimensions))
        cursor.execute(
            f"INSERT INTO {TABLE}(memory_id, partition, status, embedding) "
            f"SELECT memory_id, partition, status, embedding FROM {COPY} ORDER BY partition"
        )
        cursor.execute(f"DROP TABLE {COPY}")
        log_changes(cursor, [(ALL_PARTITIONS, None)])


class Migration(migrations.Migration):
    dependencies = [("memories", "0016_user_erasure_started_at")]
    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop)]
