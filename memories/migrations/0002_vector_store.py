"""The vector store's own structures: the sqlite-vec table vec_memory_embeddings on SQLite,
an HNSW index on the embedding vector on PostgreSQL. Dimensions come from
EMBEDDING_DIMENSIONS; `manage.py reembed` rebuilds them after a model change."""

from django.conf import settings
from django.db import migrations


def create(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        # The graph of every vector, as it was until 0018 dropped it.
        d = int(settings.EMBEDDING_DIMENSIONS)
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS memory_embedding_hnsw_{d} ON memories_memoryembedding "
            f"USING hnsw ((vector::vector({d})) vector_cosine_ops) WHERE dimensions = {d}"
        )
    elif connection.vendor == "sqlite":
        from memories.recall.vector_store.sqlite_vec import create_table_sql

        schema_editor.execute(create_table_sql(settings.EMBEDDING_DIMENSIONS))


def drop(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        schema_editor.execute(
            f"DROP INDEX IF EXISTS memory_embedding_hnsw_{settings.EMBEDDING_DIMENSIONS}"
        )
    elif connection.vendor == "sqlite":
        schema_editor.execute("DROP TABLE IF EXISTS vec_memory_embeddings")


class Migration(migrations.Migration):
    dependencies = [("memories", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
