"""What memories adds to the operations endpoints: the embedder's readiness check for /readyz
and the review queue's gauge for /metrics (registered in MemoriesConfig.ready)."""

import logging

from prometheus_client.core import GaugeMetricFamily

from memories import selectors
from memories.embeddings.embedders import embedder_is_loaded
from memories.recall.calibration import embedder_warm_up
from ops.health import NotReady

logger = logging.getLogger(__name__)


def check_embedder() -> None:
    """Ready once the local model answers in this process. Serving processes load it before
    they listen (config/serving.py); an entry point that did not is loaded by its first
    probe (a second or two) rather than reported unready until some search loads it."""
    if embedder_is_loaded():
        return
    try:
        embedder_warm_up()
    except Exception as exc:
        logger.warning("loading the local embedding model failed: %s: %s", type(exc).__name__, exc)
        raise NotReady("the local embedding model cannot be loaded: see the service log") from exc


class PendingReviewCollector:
    """The review queue's length, counted when Prometheus scrapes (one indexed count)."""

    def collect(self):
        yield GaugeMetricFamily(
            "memory_pending_review",
            "Memories waiting for review (pending_review, not deleted).",
            value=selectors.pending_memories().count(),
        )
