"""PostgreSQL: no HNSW graph of every user's vectors any more. A partition is searched by an
exact scan of its rows (B-tree on partition) until it is large enough for a graph of its own
(memories/recall/vector_store/partition_indexes.py, built by a periodic task and by
`manage.py index_partitions`, which is worth running right after this migration on a database
with users of many memories). The global graph, filtered to one user, found a third of a heavy
user's nearest among a million vectors, cost every write an insert into it and a third of the
database's size."""

import re

from django.conf import settings
from django.db import migrations

GLOBAL_GRAPH = re.compile(r"^memory_embedding_hnsw_\d+$")


def drop_global_graphs(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'memory_embedding_hnsw_%%'"
        )
        names = [row[0] for row in cursor.fetchall() if GLOBAL_GRAPH.match(row[0])]
    for name in names:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


def recreate_global_graph(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    d = int(settings.EMBEDDING_DIMENSIONS)
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS memory_embedding_hnsw_{d} ON memories_memoryembedding "
        f"USING hnsw ((vector::vector({d})) vector_cosine_ops) WHERE dimensions = {d}"
    )


class Migration(migrations.Migration):
    dependencies = [("memories", "0017_vector_chunks")]
    operations = [migrations.RunPython(drop_global_graphs, recreate_global_graph)]
