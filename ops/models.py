"""The service's own usage figures, kept per day: how many searches and context calls were
answered and how long they took, as counts in fixed latency buckets (ops.usage writes and
reads them). Ops imports no app: the tenant is its id, not a foreign key."""

from django.db import models
from django.db.models import Q


class UsageKind(models.TextChoices):
    SEARCH = "search"
    CONTEXT = "context"


# The latency buckets: (field, upper bound in milliseconds), the last without one. A call of
# 12 ms counts in ms_10_15. Fixed: a change needs a migration, and old days keep their edges.
LATENCY_BUCKETS: tuple[tuple[str, float | None], ...] = (
    ("ms_0_5", 5),
    ("ms_5_10", 10),
    ("ms_10_15", 15),
    ("ms_15_20", 20),
    ("ms_20_30", 30),
    ("ms_30_40", 40),
    ("ms_40_50", 50),
    ("ms_50_75", 75),
    ("ms_75_100", 100),
    ("ms_100_150", 150),
    ("ms_150_250", 250),
    ("ms_250_500", 500),
    ("ms_500_1000", 1000),
    ("ms_1000_2500", 2500),
    ("ms_2500_up", None),
)


class DailyUsage(models.Model):
    """Calls of one kind answered on one day (UTC) for the users of one tenant (none: local
    accounts), with their latencies by bucket (LATENCY_BUCKETS)."""

    day = models.DateField()
    tenant_id = models.UUIDField(null=True, blank=True)
    kind = models.CharField(max_length=8, choices=UsageKind.choices)
    # Each worker process counts in a row of its own (ops.usage.shard_of), so concurrent
    # calls of one tenant do not queue on one row's lock; the figures are their sum.
    shard = models.PositiveSmallIntegerField(default=0)
    count = models.PositiveBigIntegerField(default=0)
    ms_0_5 = models.PositiveBigIntegerField(default=0)
    ms_5_10 = models.PositiveBigIntegerField(default=0)
    ms_10_15 = models.PositiveBigIntegerField(default=0)
    ms_15_20 = models.PositiveBigIntegerField(default=0)
    ms_20_30 = models.PositiveBigIntegerField(default=0)
    ms_30_40 = models.PositiveBigIntegerField(default=0)
    ms_40_50 = models.PositiveBigIntegerField(default=0)
    ms_50_75 = models.PositiveBigIntegerField(default=0)
    ms_75_100 = models.PositiveBigIntegerField(default=0)
    ms_100_150 = models.PositiveBigIntegerField(default=0)
    ms_150_250 = models.PositiveBigIntegerField(default=0)
    ms_250_500 = models.PositiveBigIntegerField(default=0)
    ms_500_1000 = models.PositiveBigIntegerField(default=0)
    ms_1000_2500 = models.PositiveBigIntegerField(default=0)
    ms_2500_up = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            # One row per day, kind and tenant; NULLs are distinct in a unique index on both
            # databases, so the rows of local accounts (no tenant) get one of their own.
            models.UniqueConstraint(
                fields=["day", "kind", "tenant_id", "shard"],
                name="daily_usage_one_row_per_tenant",
            ),
            models.UniqueConstraint(
                fields=["day", "kind", "shard"],
                condition=Q(tenant_id__isnull=True),
                name="daily_usage_one_row_without_tenant",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.kind} {self.tenant_id or 'local'}: {self.count}"
