"""PostgreSQL: leave room on each page of the memory table, so that the UPDATE every recall
makes (access_count, last_accessed_at: no index covers them) stays a HOT update. On full
pages it is not, and each one writes new entries into every index of the table, the GIN
keyword index included. Applies to pages written from now on; `VACUUM FULL memories_memory`
repacks older ones."""

from django.db import migrations


def set_fillfactor(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE memories_memory SET (fillfactor = 80)")


def reset_fillfactor(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE memories_memory RESET (fillfactor)")


class Migration(migrations.Migration):
    dependencies = [("memories", "0004_keyword_index")]
    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor)]
