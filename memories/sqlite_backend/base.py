"""SQLite backend that loads sqlite-vec into every connection.

Some Python builds (pyenv's among them) compile the sqlite3 module without
enable_load_extension. There we put pysqlite3 (the `pysqlite3-binary` wheel, a
current SQLite with extension loading) in place of sqlite3 before Django's SQLite
backend imports it, so Django's backend, its cursor class and its error mapping all
use the same driver.
"""

import sqlite3
import sys

if not hasattr(sqlite3.Connection, "enable_load_extension"):
    try:
        import pysqlite3
        import pysqlite3.dbapi2
    except ImportError as exc:  # pragma: no cover - depends on the Python build
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "This Python's sqlite3 cannot load extensions and pysqlite3-binary is not "
            "installed; install it (pip install pysqlite3-binary) or use a Python whose "
            "sqlite3 supports enable_load_extension."
        ) from exc
    sys.modules["sqlite3"] = pysqlite3
    sys.modules["sqlite3.dbapi2"] = pysqlite3.dbapi2

from django.db.backends.sqlite3 import base as sqlite_base  # noqa: E402


class DatabaseWrapper(sqlite_base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        # Imported here: the backend loads before the apps, and the vector store imports models.
        from memories.recall.vector_store.sqlite_vec import load_extension

        connection = super().get_new_connection(conn_params)
        load_extension(connection)
        return connection
