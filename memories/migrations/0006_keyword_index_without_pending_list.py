"""PostgreSQL: the GIN keyword index takes new entries straight into its tree (fastupdate
off). With fastupdate on, inserts are parked in a pending list of up to
gin_pending_list_limit (4 MB) that only VACUUM or autoanalyze merges, and every keyword
search reads the whole list: about 500 pages, some 2 ms per recall, however few memories
the query words match. A memory service reads far more often than it writes, and one
memory's insert into the tree costs well under a millisecond. Entries already pending are
merged here."""

from django.db import migrations

INDEX = "memory_search_vector_gin"


def fastupdate_off(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER INDEX {INDEX} SET (fastupdate = off)")
        schema_editor.execute(f"SELECT gin_clean_pending_list('{INDEX}'::regclass)")


def fastupdate_default(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER INDEX {INDEX} RESET (fastupdate)")


class Migration(migrations.Migration):
    dependencies = [("memories", "0005_memory_fillfactor")]
    operations = [migrations.RunPython(fastupdate_off, fastupdate_default)]
