"""bench.dj.database_info: what a results file says about the database it was timed on."""

import numpy as np
import pytest
from django.db import connection

from bench import dj
from memories.models import Status
from memories.recall.vector_store import get_vector_store
from memories.recall.vector_store.partition_indexes import (
    GRAPH_EF_CONSTRUCTION,
    GRAPH_M,
    partition_indexes_sync,
)
from tests.conftest import make_user
from tests.memories.helpers import bulk_memories


@pytest.mark.django_db
def test_database_info_names_the_database_and_its_vector_extension():
    info = dj.database_info()
    assert info["vendor"] == connection.vendor
    if connection.vendor == "postgresql":
        assert info["pgvector"]
        # The buffer size decides whether graph pages are read from PostgreSQL's buffers.
        assert info["shared_buffers"].endswith(("kB", "MB", "GB"))
    else:
        assert info["sqlite_vec"].startswith("v")
        assert "shared_buffers" not in info


@pytest.mark.django_db
def test_database_info_names_how_the_partition_graphs_were_built(settings):
    """The graph options a PostgreSQL run was timed with come from the graphs themselves
    (a graph keeps the options of its build), so a results file cannot claim newer ones."""
    if connection.vendor != "postgresql":
        assert "hnsw" not in dj.database_info()
        return
    assert dj.database_info()["hnsw"]["graphs"] == []
    user = make_user("heavy")
    memories = bulk_memories(user, 3, status=Status.ACTIVE)
    vectors = np.random.default_rng(3).normal(size=(3, 8))
    get_vector_store().save_many(
        items=list(zip(memories, vectors.tolist(), strict=True)), model="test"
    )
    assert partition_indexes_sync(min_memories=2)["created"]
    hnsw = dj.database_info()["hnsw"]
    assert hnsw["ef_search"] == settings.RECALL_HNSW_EF_SEARCH
    assert hnsw["graphs"] == [{"m": GRAPH_M, "ef_construction": GRAPH_EF_CONSTRUCTION, "graphs": 1}]
