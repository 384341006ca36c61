"""bench.dj.database_info: what a results file says about the database it was timed on."""

import pytest
from django.db import connection

from bench import dj


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
