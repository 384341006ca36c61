"""A large mirrored partition's vectors in 8 bits, to pick the candidates of an exact search.

Why: multiplying a query with 100,000 vectors of 384 float32 reads 150 MB, and takes ~20 ms
however it is computed: the product is bound by memory bandwidth. The same rows in 8 bits,
one row per vector (rows × dimensions) for ONNX Runtime's integer matrix product, are a
quarter of that and take ~2 ms. Their order is close to the exact one, not the same: the
`candidates` best by the 8-bit product are then scored exactly (float32) and the k best of
those returned, so a result can differ from the exact top k only where a row's 8-bit score
put it outside the candidates (the tests and `bench served` measure the share found).

Each dimension is centred on the partition's mean and scaled by its largest deviation when
the rows are quantised: a query's dot product with the mean is the same for every row, so
centring changes no order and spends the 8 bits on what differs between rows (e5's vectors
share a large common part). Rows written later are quantised with the same centre and scale,
clipped where they fall outside; `stale` says when to quantise the whole partition anew.

The rows are the product's left operand, stored as unsigned bytes (value + 128), and the
query its one-column right operand: ONNX Runtime packs the right operand on every call, so
the query (384 bytes) is packed rather than the rows (38 MB at 100,000; with the rows on the
right, 11 ms a search on an Intel Xeon with AMX here against 2 ms). The +128 adds 128 times
the query's sum to every row's score alike, which changes no order."""

import functools

import numpy as np

# Rows quantised since the last whole quantisation, or clipped, past this share of the
# partition: quantise it anew at the next search.
STALE_SHARE = 0.25
# A row's signed 8-bit values are stored shifted by this, as unsigned bytes.
ROW_ZERO = 128


@functools.cache
def _session():
    """One ONNX Runtime session for every partition: uint8 rows [n, d] times the int8 query
    [d, 1] -> int32 scores [n, 1]."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("MatMulInteger", ["rows", "query"], ["scores"])
    graph = helper.make_graph(
        [node],
        "quantized_scores",
        [
            helper.make_tensor_value_info("rows", TensorProto.UINT8, ["n", "d"]),
            helper.make_tensor_value_info("query", TensorProto.INT8, ["d", 1]),
        ],
        [helper.make_tensor_value_info("scores", TensorProto.INT32, ["n", 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    # One thread: the web processes already use every core between them.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


class QuantizedRows:
    """8-bit copies of a mirror's rows, `rows` (capacity × dimensions, unsigned: value + 128);
    row i is row i of the mirror. Rows past the mirror's size are never searched."""

    def __init__(self, matrix: np.ndarray, size: int) -> None:
        rows = matrix[:size]
        self.centre = rows.mean(axis=0).astype(np.float32)
        spread = np.abs(rows - self.centre).max(axis=0)
        self.scale = (np.where(spread > 0, spread, 1.0) / 127.0).astype(np.float32)
        self.rows = np.full((len(matrix), matrix.shape[1]), ROW_ZERO, dtype=np.uint8)
        self.rows[:size] = self._quantise(rows)
        self.size_at_build = size
        self.changed = 0

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes

    def _quantise(self, rows: np.ndarray) -> np.ndarray:
        scaled = np.rint((rows - self.centre) / self.scale)
        clipped = int(np.count_nonzero(np.abs(scaled) > 127))
        if clipped:
            self.changed += clipped
        return (np.clip(scaled, -127, 127) + ROW_ZERO).astype(np.uint8)

    def stale(self, size: int) -> bool:
        return self.changed > STALE_SHARE * max(size, 1) or size > 2 * self.size_at_build

    def put(self, row: int, vector: np.ndarray, capacity: int) -> None:
        if capacity > len(self.rows):
            grown = np.full((capacity, self.rows.shape[1]), ROW_ZERO, dtype=np.uint8)
            grown[: len(self.rows)] = self.rows
            self.rows = grown
        self.rows[row] = self._quantise(vector[np.newaxis, :])[0]
        self.changed += 1

    def move(self, source: int, target: int) -> None:
        """Row `source` takes the place of `target`; `source`'s row is cleared."""
        self.rows[target] = self.rows[source]
        self.clear(source)
        self.changed += 1

    def clear(self, row: int) -> None:
        self.rows[row] = ROW_ZERO

    def candidates(self, query: np.ndarray, size: int, count: int) -> np.ndarray:
        """Indexes (< size) of the `count` rows with the best 8-bit scores, unordered."""
        if count >= size:
            return np.arange(size)
        weights = query * self.scale  # (row - centre) · query, per quantum of each dimension
        top = float(np.abs(weights).max()) or 1.0
        quantised = np.clip(np.rint(weights / top * 127.0), -127, 127).astype(np.int8)
        # The first `size` rows of a C-ordered array: a view, not a copy.
        scores = _session().run(None, {"rows": self.rows[:size], "query": quantised[:, None]})
        return np.argpartition(-scores[0][:, 0], count - 1)[:count]
