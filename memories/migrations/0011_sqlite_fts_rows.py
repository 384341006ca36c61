"""SQLite: the list filter's FTS5 table keeps only the text and the memory id, and
fts_memory_rows maps each memory to its FTS5 rowid, so a write replaces a memory's row by
rowid instead of scanning the whole table for its (unindexed) memory_id. The partition and
status columns went with the keyword ranking they served (now memories/recall/postings.py)."""

from django.db import migrations

TABLE = "fts_memories"
ROWS = "fts_memory_rows"
CREATE = (
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5("
    "text, memory_id UNINDEXED, tokenize='porter unicode61 remove_diacritics 2')"
)


def rebuild(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT text, memory_id FROM {TABLE}")
        rows = cursor.fetchall()
        cursor.execute(f"DROP TABLE {TABLE}")
        cursor.execute(CREATE)
        cursor.execute(
            f"CREATE TABLE {ROWS} (memory_id TEXT PRIMARY KEY, fts_rowid INTEGER NOT NULL)"
        )
        for text, memory_id in rows:
            cursor.execute(
                f"INSERT INTO {TABLE}(text, memory_id) VALUES (%s, %s)", [text, memory_id]
            )
            cursor.execute(
                f"INSERT INTO {ROWS}(memory_id, fts_rowid) VALUES (%s, %s)",
                [memory_id, cursor.lastrowid],
            )


class Migration(migrations.Migration):
    dependencies = [("memories", "0010_keyword_postings")]
    operations = [migrations.RunPython(rebuild, migrations.RunPython.noop)]
