"""A large mirrored partition's vectors in 8 bits, to pick the candidates of an exact search.

Why: multiplying a query with 100,000 vectors of 384 float32 reads 150 MB, and takes ~20 ms
however it is computed: the product is bound by memory bandwidth. The same rows in int8,
laid out one dimension per row (dimensions × rows) for ONNX Runtime's integer matrix product,
are a quarter of that and take ~4 ms. Their order is close to the exact one, not the same:
the `candidates` best by the 8-bit product are then scored exactly (float32) and the k best
of those returned, so a result can differ from the exact top k only where a row's 8-bit score
put it outside the candidates (the tests and `bench served` measure the share found).

Each dimension is centred on the partition's mean and scaled by its largest deviation when
the rows are quantised: a query's dot product with the mean is the same for every row, so
centring changes no order and spends the 8 bits on what differs between rows (e5's vectors
share a large common part). Rows written later are quantised with the same centre and scale,
clipped where they fall outside; `stale` says when to quantise the whole partition anew."""

import functools
import threading

import numpy as np

# Rows quantised since the last whole quantisation, or clipped, past this share of the
# partition: quantise it anew at the next search.
STALE_SHARE = 0.25


@functools.cache
def _session():
    """One ONNX Runtime session for every partition: uint8 query [1, d] times int8 rows
    [d, n] -> int32 [1, n]. The query's zero point (128) is taken off afterwards, by each
    row's sum: given to MatMulInteger it takes a path half as fast."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("MatMulInteger", ["query", "rows"], ["scores"])
    graph = helper.make_graph(
        [node],
        "quantized_scores",
        [
            helper.make_tensor_value_info("query", TensorProto.UINT8, [1, "d"]),
            helper.make_tensor_value_info("rows", TensorProto.INT8, ["d", "n"]),
        ],
        [helper.make_tensor_value_info("scores", TensorProto.INT32, [1, "n"])],
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


QUERY_ZERO = 128


class QuantizedRows:
    """int8 copies of a mirror's rows, columns of `columns` (dimensions × capacity); column i
    is row i of the mirror. Unused columns are zero and score 0, below no real candidate
    that matters: they are dropped by index before the exact step."""

    def __init__(self, matrix: np.ndarray, size: int) -> None:
        rows = matrix[:size]
        self.centre = rows.mean(axis=0).astype(np.float32)
        spread = np.abs(rows - self.centre).max(axis=0)
        self.scale = (np.where(spread > 0, spread, 1.0) / 127.0).astype(np.float32)
        self.columns = np.zeros((matrix.shape[1], len(matrix)), dtype=np.int8)
        self.columns[:, :size] = self._quantise(rows).T
        # QUERY_ZERO times each row's sum: what the uint8 query adds to the row's score.
        self.offsets = QUERY_ZERO * self.columns.sum(axis=0, dtype=np.int32)
        self.size_at_build = size
        self.changed = 0
        self.lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self.columns.nbytes + self.offsets.nbytes

    def _quantise(self, rows: np.ndarray) -> np.ndarray:
        scaled = np.rint((rows - self.centre) / self.scale)
        clipped = int(np.count_nonzero(np.abs(scaled) > 127))
        if clipped:
            self.changed += clipped
        return np.clip(scaled, -127, 127).astype(np.int8)

    def stale(self, size: int) -> bool:
        return self.changed > STALE_SHARE * max(size, 1) or size > 2 * self.size_at_build

    def put(self, row: int, vector: np.ndarray, capacity: int) -> None:
        if capacity > self.columns.shape[1]:
            grown = np.zeros((self.columns.shape[0], capacity), dtype=np.int8)
            grown[:, : self.columns.shape[1]] = self.columns
            self.columns = grown
            self.offsets = np.concatenate(
                [self.offsets, np.zeros(capacity - len(self.offsets), dtype=np.int32)]
            )
        self.columns[:, row] = self._quantise(vector[np.newaxis, :])[0]
        self.offsets[row] = QUERY_ZERO * int(self.columns[:, row].sum(dtype=np.int32))
        self.changed += 1

    def move(self, source: int, target: int) -> None:
        """Row `source` takes the place of `target`; `source`'s column is cleared."""
        self.columns[:, target] = self.columns[:, source]
        self.offsets[target] = self.offsets[source]
        self.clear(source)
        self.changed += 1

    def clear(self, row: int) -> None:
        self.columns[:, row] = 0
        self.offsets[row] = 0

    def candidates(self, query: np.ndarray, size: int, count: int) -> np.ndarray:
        """Indexes (< size) of the `count` rows with the best 8-bit scores, unordered."""
        weights = query * self.scale  # (row - centre) · query, per quantum of each dimension
        top = float(np.abs(weights).max()) or 1.0
        quantised = np.clip(np.rint(weights / top * 127.0) + QUERY_ZERO, 0, 255).astype(np.uint8)
        scores = _session().run(None, {"query": quantised[np.newaxis, :], "rows": self.columns})
        scores = scores[0][0, :size] - self.offsets[:size]
        if count >= size:
            return np.arange(size)
        return np.argpartition(-scores, count - 1)[:count]
