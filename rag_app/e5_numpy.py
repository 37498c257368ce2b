"""multilingual-e5-small's forward pass in numpy (:class:`NumpyE5`), and the cross reader's
trained top (:class:`NumpyTop`): what answering runs, so that a command that answers never
imports PyTorch (2–3 s of start-up on 2 cores, ~300 MB of memory).

The same operations as :class:`rag_app.e5_torch.TorchE5` in float32: layer norm, attention over
each token's own packed sequence, exact (erf) GELU, with the matrix products in numpy's BLAS.
The states agree with PyTorch's to float32 rounding (max |difference| ~1e-5 after 12 layers,
tests/test_e5_numpy.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from rag_app.e5_model import E5Model

F32 = np.float32


def erf(x: np.ndarray) -> np.ndarray:
    """erf in float32 to within ~1e-6 (Abramowitz and Stegun 7.1.26, whose own error is 1.5e-7),
    elementwise, computed in place on two temporaries."""
    a = np.abs(x)
    t = F32(1.0) / (F32(1.0) + F32(0.3275911) * a)
    p = F32(1.061405429) * t
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        p += F32(c)
        p *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    p *= a
    np.subtract(F32(1.0), p, out=p)
    return np.copysign(p, x, out=p)


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x * Φ(x), as ``torch.nn.functional.gelu`` computes it."""
    out = erf(x * F32(1.0 / math.sqrt(2.0)))
    out += F32(1.0)
    out *= x
    out *= F32(0.5)
    return out


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(var + F32(eps)) * weight + bias  # type: ignore[no-any-return]


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``torch.nn.functional.linear``: x @ weight.T + bias, as one matrix product."""
    flat = x.reshape(-1, x.shape[-1]) @ weight.T
    flat += bias
    return flat.reshape(*x.shape[:-1], weight.shape[0])


def softmax(scores: np.ndarray) -> np.ndarray:
    """Over the last axis, in place (``scores`` is overwritten)."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


def block(
    x: np.ndarray, blk: Mapping[str, tuple[np.ndarray, np.ndarray]], allowed: np.ndarray,
    heads: int, eps: float,
) -> np.ndarray:  # fmt: skip
    """One post-norm transformer block (e5's layout); ``allowed``: (batch, 1, width, width)
    True where a token may attend."""
    batch, width, hidden = x.shape
    hd = hidden // heads
    qkv = linear(x, *blk["qkv"]).reshape(batch, width, 3, heads, hd).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]  # (batch, heads, width, hd)
    scores = q @ k.transpose(0, 1, 3, 2)
    scores *= F32(1.0 / math.sqrt(hd))
    np.putmask(scores, np.broadcast_to(~allowed, scores.shape), F32(-np.inf))
    ctx = softmax(scores) @ v
    ctx = ctx.transpose(0, 2, 1, 3).reshape(batch, width, hidden)
    x = layer_norm(x + linear(ctx, *blk["ao"]), *blk["aln"], eps)
    return layer_norm(x + linear(gelu(linear(x, *blk["fi"])), *blk["fo"]), *blk["oln"], eps)


@contextlib.contextmanager
def blas_threads(threads: int | None) -> Iterator[None]:
    """numpy's BLAS limited to ``threads`` for the duration (None: as it is)."""
    if not threads:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield


class NumpyE5(E5Model):
    """:class:`~rag_app.e5_model.E5Model` with a numpy forward pass (no PyTorch)."""

    def _states(self, rows: list[list[list[int]]], layers: int | None = None) -> list[np.ndarray]:
        lay = self.layout(rows)
        batch, width = lay.ids.shape
        valid = lay.seg >= 0
        x = np.zeros((batch, width, self.hidden), dtype=F32)
        x[valid] = self._word(lay.ids[valid].tolist())
        # each token attends to its own sequence (a padding token to itself: no empty rows)
        same = lay.seg[:, :, None] == lay.seg[:, None, :]
        allowed = ((same & valid[:, None, :]) | np.eye(width, dtype=bool))[:, None]
        with blas_threads(self.threads):
            x = layer_norm(x + self.pos[lay.pos] + self.type0, self.ln[0], self.ln[1], self.eps)
            for blk in self.blocks[:layers]:
                x = block(x, blk, allowed, self.heads, self.eps)
        return self.split(x[valid], lay.seg[valid], lay.sequences)


def top_shapes(hidden: int, ffn: int, blocks: int) -> dict[str, tuple[int, ...]]:
    """The cross reader's trained tensors (``torch`` state-dict names) and their shapes."""
    shapes: dict[str, tuple[int, ...]] = {}
    for i in range(blocks):
        for name, out, inp in (("qkv", 3 * hidden, hidden), ("ao", hidden, hidden),
                               ("fi", ffn, hidden), ("fo", hidden, ffn)):  # fmt: skip
            shapes[f"blocks.{i}.{name}.weight"] = (out, inp)
            shapes[f"blocks.{i}.{name}.bias"] = (out,)
        for name in ("aln", "oln"):
            shapes[f"blocks.{i}.{name}.weight"] = (hidden,)
            shapes[f"blocks.{i}.{name}.bias"] = (hidden,)
    for name, out in (("pool", 1), ("cls.0", hidden), ("cls.2", 1), ("span", 2)):
        shapes[f"{name}.weight"] = (out, hidden)
        shapes[f"{name}.bias"] = (out,)
    return shapes


class NumpyTop:
    """The cross reader's trained blocks and heads (``build_top``'s ``Top``) in numpy."""

    def __init__(self, arrays: Mapping[str, np.ndarray], blocks: int, heads: int, eps: float):
        a = {k: np.ascontiguousarray(v, dtype=F32) for k, v in arrays.items()}
        names = ("qkv", "ao", "aln", "fi", "fo", "oln")
        self.blocks: list[dict[str, Any]] = [
            {n: (a[f"blocks.{i}.{n}.weight"], a[f"blocks.{i}.{n}.bias"]) for n in names}
            for i in range(blocks)
        ]
        self.heads, self.eps = heads, eps
        self.pool = (a["pool.weight"], a["pool.bias"])
        self.cls = ((a["cls.0.weight"], a["cls.0.bias"]), (a["cls.2.weight"], a["cls.2.bias"]))
        self.span = (a["span.weight"], a["span.bias"])

    def __call__(
        self, x: np.ndarray, valid: np.ndarray, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(answerability logits, start logits, end logits) for a padded batch ``x``
        (batch, width, hidden) whose ``valid`` tokens are True."""
        allowed = valid[:, None, None, :]
        neg = F32(np.finfo(F32).min)
        with blas_threads(threads):
            for blk in self.blocks:
                x = block(x, blk, allowed, self.heads, self.eps)
            weights = softmax(np.where(valid, linear(x, *self.pool)[..., 0], neg))
            pooled = (weights[..., None] * x).sum(axis=1)
            answerable = linear(np.tanh(linear(pooled, *self.cls[0])), *self.cls[1])[..., 0]
            span = linear(x, *self.span)
        start = np.where(valid, span[..., 0], neg)
        end = np.where(valid, span[..., 1], neg)
        return answerable, start, end
