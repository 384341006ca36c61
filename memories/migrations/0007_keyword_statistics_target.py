"""PostgreSQL: ANALYZE samples 300 times the statistics target in rows (default 100: 30,000)
and keeps at most 10 times the target in lexeme frequencies. Recall chooses the words its
keyword half looks memories up by from these frequencies (keyword.lexemes_within_budget), so
an estimate off by a bad sample can make a common word pass for a rare one: among 100,000
memories, recall@10 of the LOCOMO questions moved between 0.50 and 0.55 from one ANALYZE to
the next at the default target, and stayed at 0.547 at 1000 (bench/README.md). ANALYZE then
reads up to 300,000 rows, in autovacuum's background work."""

from django.db import migrations

TARGET = 1000


def set_target(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE memories_memory ALTER COLUMN search_vector SET STATISTICS {TARGET}"
        )


def reset_target(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE memories_memory ALTER COLUMN search_vector SET STATISTICS -1"
        )


class Migration(migrations.Migration):
    dependencies = [("memories", "0006_keyword_index_without_pending_list")]
    operations = [migrations.RunPython(set_target, reset_target)]
