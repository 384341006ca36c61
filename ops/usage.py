"""Usage the service keeps for the review dashboard: searches and context calls per day (UTC)
and tenant, with their latencies in fixed buckets (ops.models.LATENCY_BUCKETS), from which
p50 and p95 are read. The interfaces that answer them (REST, the tools, MCP) count each call
with `counted`; what the review pages run for staff (the recall playground) does not.

Each call costs one UPDATE of its day's row, `count + 1` and one bucket + 1 computed by the
database, so concurrent calls never lose one; the day's first call inserts the row. Each
worker process has rows of its own (SHARDS of them a day, kind and tenant at most), so the
calls of many workers do not wait on one row's lock."""

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date
from functools import wraps
from time import perf_counter
from uuid import UUID

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from ops.models import LATENCY_BUCKETS, DailyUsage

BUCKET_FIELDS = tuple(name for name, _ in LATENCY_BUCKETS)
SHARDS = 8


def shard_of(process_id: int | None = None) -> int:
    """The row a worker process counts in: its process id modulo SHARDS."""
    return (os.getpid() if process_id is None else process_id) % SHARDS


def bucket_of(milliseconds: float) -> str:
    """The field of the bucket a call of this many milliseconds counts in."""
    for name, upper in LATENCY_BUCKETS:
        if upper is None or milliseconds <= upper:
            return name
    raise AssertionError("the last bucket has no upper bound")  # pragma: no cover


def _add_one(*, day: date, kind: str, tenant_id: UUID | None, bucket: str, shard: int) -> bool:
    """count + 1 and bucket + 1 on the day's row, computed by the database in one UPDATE
    (what F("count") + 1 writes), so that concurrent calls never overwrite each other's
    counts. False when the row is not there yet."""
    quote = connection.ops.quote_name
    # On PostgreSQL, when the UPDATE is a transaction of its own, its commit does not wait
    # for the WAL to reach the disk (as the recall's access write, memories.recall.access):
    # a crash may lose the last fraction of a second of counts, and no call waits on the
    # disk for them (measured: 0.6 ms a call instead of 0.9-4 on the test machine's disk).
    asynchronous_commit = (
        " FROM (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous_commit"
        if connection.vendor == "postgresql" and not connection.in_atomic_block
        else ""
    )
    column = quote(bucket)
    tenant_field = DailyUsage._meta.get_field("tenant_id")
    tenant = "tenant_id IS NULL" if tenant_id is None else f"{quote('tenant_id')} = %s"
    parameters = [connection.ops.adapt_datefield_value(day), kind, shard]
    if tenant_id is not None:
        parameters.append(tenant_field.get_db_prep_value(tenant_id, connection))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(DailyUsage._meta.db_table)} SET count = count + 1, "
            f"{column} = {column} + 1{asynchronous_commit} "
            f"WHERE day = %s AND kind = %s AND shard = %s AND {tenant}",
            parameters,
        )
        return cursor.rowcount > 0


def usage_record(
    *, kind: str, tenant_id: UUID | None, seconds: float, day: date | None = None
) -> None:
    """Count one call of `kind` that took `seconds`, on `day` (today, UTC) for the tenant:
    one UPDATE; the day's first call inserts the row."""
    day = day or timezone.now().date()
    bucket = bucket_of(seconds * 1000)
    shard = shard_of()
    if _add_one(day=day, kind=kind, tenant_id=tenant_id, bucket=bucket, shard=shard):
        return
    try:
        # A savepoint: a caller inside a transaction goes on after the IntegrityError.
        with transaction.atomic():
            DailyUsage.objects.create(
                day=day, kind=kind, tenant_id=tenant_id, shard=shard, count=1, **{bucket: 1}
            )
    except IntegrityError:
        # Another call inserted the day's row between our UPDATE and INSERT (the unique
        # constraint made ours wait for its commit): add to that row.
        _add_one(day=day, kind=kind, tenant_id=tenant_id, bucket=bucket, shard=shard)


@contextmanager
def counted(kind: str, *, tenant_id: UUID | None, count: bool = True) -> Iterator[None]:
    """`with counted("search", tenant_id=...):` times the block and, when it ends without an
    error, counts it (usage_record). `count=False` runs the block uncounted."""
    started = perf_counter()
    yield
    if count:
        usage_record(kind=kind, tenant_id=tenant_id, seconds=perf_counter() - started)


def counts(kind: str) -> Callable:
    """A view method decorator: the call is `counted` for the tenant of request.user."""

    def decorate(view_method: Callable) -> Callable:
        @wraps(view_method)
        def wrapper(self, request, *args, **kwargs):
            with counted(kind, tenant_id=getattr(request.user, "tenant_id", None)):
                return view_method(self, request, *args, **kwargs)

        return wrapper

    return decorate


def latency_quantile(buckets: Sequence[int], q: float) -> float | None:
    """The q-quantile (0 < q < 1) in milliseconds of calls counted in `buckets` (one count
    per LATENCY_BUCKETS entry, in order); None without calls. As Prometheus'
    histogram_quantile: the bucket holding the q-th call is found, and the value is
    interpolated linearly inside it (the first bucket starts at 0); in the last, unbounded
    bucket it is that bucket's lower edge. The true value lies in the same bucket, so the
    resolution is the bucket's width (5 ms up to 20 ms, 10 ms up to 50, then wider)."""
    total = sum(buckets)
    if total == 0:
        return None
    rank = q * total
    seen, lower = 0, 0.0
    for count, (_, upper) in zip(buckets, LATENCY_BUCKETS, strict=True):
        if count and seen + count >= rank:
            if upper is None:
                return lower
            return lower + (upper - lower) * (rank - seen) / count
        seen += count
        lower = float(upper) if upper is not None else lower
    return lower  # pragma: no cover - rank <= total always lands in a bucket


def buckets_of(row: Mapping[str, int | None]) -> list[int]:
    """A row's (or a Sum aggregate's) bucket counts, in LATENCY_BUCKETS order."""
    return [row.get(name) or 0 for name in BUCKET_FIELDS]
