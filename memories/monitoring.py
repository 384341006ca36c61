"""What memories adds to the operations endpoints: the embedder's readiness check for /readyz
and the review queue's gauge for /metrics (registered in MemoriesConfig.ready)."""

from prometheus_client.core import GaugeMetricFamily

from memories import selectors
from memories.embedders import embedder_is_loaded
from ops.health import NotReady


def check_embedder() -> None:
    if not embedder_is_loaded():
        raise NotReady("the local embedding model is not loaded in this process yet")


class PendingReviewCollector:
    """The review queue's length, counted when Prometheus scrapes (one indexed count)."""

    def collect(self):
        yield GaugeMetricFamily(
            "memory_pending_review",
            "Memories waiting for review (pending_review, not deleted).",
            value=selectors.pending_memories().count(),
        )
