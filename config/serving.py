"""What a serving process does before it answers (config/wsgi.py, gunicorn's hooks, the MCP
server): the local model's ONNX file exported if this checkout has none yet, then the model
loaded and measured, each with a log line, and a line naming the extractor that runs. The
first start of a checkout exports (~10 s); after this the first request is as fast as the rest
and /readyz says ready."""

import logging
import time
from pathlib import Path

from django.conf import settings

from extraction.llm import extractor_log
from memories.embeddings.embedders import export_local_model, local_model_exporter
from memories.models.languages import language_of
from memories.recall.calibration import embedder_warm_up

logger = logging.getLogger(__name__)


def local_model_missing() -> bool:
    """True when the configured local ONNX model has not been exported in this checkout."""
    if settings.EMBEDDER != "local" or settings.EMBEDDER_RUNTIME not in ("onnx", "onnx-int8"):
        return False
    name = local_model_exporter().file_name(int8=settings.EMBEDDER_RUNTIME == "onnx-int8")
    return not (Path(settings.EMBEDDING_CACHE_DIR) / name).exists()


def prepare_model() -> None:
    """Export the local model if it is missing, saying so: the first start waits for it."""
    if not local_model_missing():
        return
    started = time.perf_counter()
    logger.info(
        "exporting the local embedding model %s to %s (first start of this checkout, ~10 s)",
        settings.EMBEDDING_LOCAL_MODEL,
        settings.EMBEDDING_CACHE_DIR,
    )
    export_local_model()
    logger.info("embedding model exported in %.1f s", time.perf_counter() - started)


def prepare_serving_process() -> None:
    """Say which extractor runs, export the model if missing, then load it and embed one
    text. Raises what loading the model raises."""
    # Once per process that serves: each gunicorn worker (config/wsgi.py), runserver's, the
    # MCP server's; Celery workers say it too (config/celery.py), management commands do not.
    extractor_log()
    prepare_model()
    # The language guesser (py3langid's model, ~0.5 s to load) that every save and recall
    # uses, so that no request waits for it.
    language_of("warm up")
    if settings.EMBEDDER != "local":
        return
    started = time.perf_counter()
    embedder_warm_up()
    logger.info(
        "embedding model %s (%s) loaded in %.1f s",
        settings.EMBEDDING_LOCAL_MODEL,
        settings.EMBEDDER_RUNTIME,
        time.perf_counter() - started,
    )
