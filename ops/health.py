"""Readiness: can this process answer requests now? GET /readyz runs these checks in order and
answers 503 when one fails.

What a check says in the answer is for anyone who can reach /readyz: the kind of failure and
how to fix it, never a host name or a connection string. The whole error goes to the log."""

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor
from django.db.utils import load_backend

from config.celery import app as celery_app
from ops.errors import error_body

logger = logging.getLogger(__name__)

# How long a probe waits for the database or the broker to accept a connection: a host that
# drops packets would otherwise hold the probe (and a web worker) for minutes.
CONNECT_TIMEOUT_SECONDS = 3


class NotReady(Exception):
    """A check failed; the message says why and is safe to show."""


class Skipped(Exception):
    """A check does not apply (no broker), or cannot run (no database)."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str  # ok, fail or skipped
    ms: float
    detail: str = ""

    def as_json(self) -> dict:
        body = {"status": self.status, "ms": round(self.ms, 2)}
        if self.detail:
            body["detail"] = self.detail
        return body


# Checks other apps add (AppConfig.ready), run after the database's and before the broker's:
# ops knows nothing of what they check (memories registers its embedder's).
PROCESS_CHECKS: dict[str, Callable[[], None]] = {}


def register_check(name: str, check: Callable[[], None]) -> None:
    """Add a check that raises NotReady (or Skipped) when this process cannot answer."""
    PROCESS_CHECKS[name] = check


def readiness() -> list[CheckResult]:
    """Every check's result. The database checks share one new connection, made for the
    probe: it proves the server takes connections now (a pooled one could be left over from
    before a restart) and leaves the request's own connection and transaction alone."""
    probe = _probe_connection()
    try:
        database = _run("database", lambda: _check_database(probe))
        results = [database]
        for name, check in (
            ("migrations", _check_migrations),
            ("vector_extension", _check_vector_extension),
        ):
            if database.status == "ok":
                results.append(_run(name, functools.partial(check, probe)))
            else:
                results.append(CheckResult(name, "skipped", 0.0, "the database is unreachable"))
    finally:
        probe.close()
    results.extend(_run(name, check) for name, check in PROCESS_CHECKS.items())
    results.append(_run("broker", _check_broker))
    return results


def readiness_answer() -> tuple[int, dict]:
    """The status and JSON body of GET /readyz, for every server that answers it (Django's
    view, the MCP server on its own): 200 when every check passes, else 503 naming the
    checks that failed."""
    results = readiness()
    body = {"status": "ok", "checks": {result.name: result.as_json() for result in results}}
    failed = [result for result in results if result.status == "fail"]
    if not failed:
        return 200, body
    names = ", ".join(result.name for result in failed)
    details = {result.name: [result.detail] for result in failed}
    return 503, {
        **error_body("not_ready", f"Not ready: {names} failed.", details),
        **body,
        "status": "fail",
    }


def _run(name: str, check: Callable[[], None]) -> CheckResult:
    started = time.perf_counter()
    try:
        check()
    except Skipped as exc:
        return CheckResult(name, "skipped", _ms_since(started), str(exc))
    except NotReady as exc:
        logger.warning("readiness check %s failed: %s", name, exc)
        return CheckResult(name, "fail", _ms_since(started), str(exc))
    except Exception as exc:  # an unreachable server raises whatever its driver raises
        logger.warning("readiness check %s failed: %s: %s", name, type(exc).__name__, exc)
        detail = f"{type(exc).__name__}; the service log has the details"
        return CheckResult(name, "fail", _ms_since(started), detail)
    return CheckResult(name, "ok", _ms_since(started))


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _probe_connection() -> BaseDatabaseWrapper:
    database = connections.settings[DEFAULT_DB_ALIAS]
    if database["ENGINE"] == "django.db.backends.postgresql":
        options = {"connect_timeout": CONNECT_TIMEOUT_SECONDS, **database.get("OPTIONS", {})}
        database = {**database, "OPTIONS": options}
    return load_backend(database["ENGINE"]).DatabaseWrapper(database, DEFAULT_DB_ALIAS)


def _check_database(probe: BaseDatabaseWrapper) -> None:
    with probe.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def _check_migrations(probe: BaseDatabaseWrapper) -> None:
    executor = MigrationExecutor(probe)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        raise NotReady(f"{len(plan)} migrations are not applied: run manage.py migrate")


def _check_vector_extension(probe: BaseDatabaseWrapper) -> None:
    with probe.cursor() as cursor:
        if probe.vendor == "postgresql":
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            if cursor.fetchone() is None:
                raise NotReady("pgvector is not installed: run CREATE EXTENSION vector")
        else:
            # Our SQLite backend loads sqlite-vec into every connection; this fails if not.
            cursor.execute("SELECT vec_version()")
            cursor.fetchone()


def _check_broker() -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        raise Skipped("no broker: tasks run in-process")
    with celery_app.connection_for_write(
        url=settings.CELERY_BROKER_URL, connect_timeout=CONNECT_TIMEOUT_SECONDS
    ) as connection:
        connection.ensure_connection(
            max_retries=1, interval_start=0, interval_step=0, timeout=CONNECT_TIMEOUT_SECONDS
        )
