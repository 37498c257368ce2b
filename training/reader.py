"""Train the cross reader (:mod:`rag_app.answer.cross_reader`) on CPU, reproducibly.

    python -m training reader [--data ../shared/data] [--cache .cache/reader]
        [--epochs 2] [--lodo] [--out rag_app/answer/reader_head.npz]

1. The pairs (:mod:`training.reader_data`) are encoded as the reader reads them
   and run once through e5's frozen lower blocks; those states are cached (float16) so that every
   epoch and every leave-one-domain-out fold trains only the top blocks and the heads.
2. Training: AdamW, linear warm-up and decay, seeded order; the loss is the answerability
   logit's binary cross-entropy plus SQuAD 2.0's span loss (start and end over the sequence, the
   no-answer span at ``<s>``) where the answer's span is known or there is none.
3. ``--lodo``: for each of the five domains, a reader trained on the other four's calibration
   halves and measured on the domain's check half (AUC of positives against unanswerable
   questions and against near misses, and the share of each refused at the threshold that
   refuses 3 % of the *training* domains' positives). The shipped reader trains on every
   domain's calibration half; its figures are on the check halves.

The file written records the data used, the steps, the seed and the figures (``meta``); a JSON
copy of them goes beside it (``reader_head.json``).
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.answer.cross_reader import (
    DEFAULT_HEAD,
    PieceSpans,
    build_top,
    encode_pair,
    init_top_from_e5,
    lower_states,
    normalized,
    padded,
    save_head,
)
from training.reader_data import DOMAINS, Pair, build_pairs

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    frozen: int = 10
    trained: int = 2
    epochs: int = 2
    batch: int = 32
    lr_blocks: float = 1e-4
    lr_heads: float = 1e-3
    span_weight: float = 0.5
    seed: int = 13


class Cache:
    """The pairs' lower states (float16, one flat array) with their labels and spans."""

    def __init__(self, states: np.ndarray, offsets: np.ndarray, meta: list[dict[str, Any]]):
        self.states, self.offsets, self.meta = states, offsets, meta

    def x(self, i: int) -> np.ndarray:
        return self.states[self.offsets[i] : self.offsets[i + 1]]

    @classmethod
    def build(cls, e5: Any, pairs: list[Pair], frozen: int, folder: Path) -> Cache:
        folder.mkdir(parents=True, exist_ok=True)
        meta_path, states_path = folder / "pairs.json", folder / "states.npy"
        if meta_path.exists() and states_path.exists():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta["frozen"] == frozen and meta["count"] == len(pairs):
                offsets = np.asarray(meta["offsets"], dtype=np.int64)
                return cls(np.load(states_path, mmap_mode="r"), offsets, meta["pairs"])
        splitter = PieceSpans(e5.tokenizer)
        encoded = [encode_pair(splitter, p.question, p.passage) for p in pairs]
        spans = [_answer_tokens(splitter, enc, p) for enc, p in zip(encoded, pairs, strict=True)]
        offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(e.ids) for e in encoded])
        states = np.lib.format.open_memmap(
            states_path, mode="w+", dtype=np.float16, shape=(int(offsets[-1]), e5.hidden)
        )
        order = sorted(range(len(pairs)), key=lambda i: len(encoded[i].ids))
        t0 = time.perf_counter()
        for n in range(0, len(order), 32):
            idx = order[n : n + 32]
            for i, s in zip(idx, lower_states(e5, [encoded[i].ids for i in idx], frozen),
                            strict=True):  # fmt: skip
                states[offsets[i] : offsets[i + 1]] = s.astype(np.float16)
            if n % 1600 == 0:
                logger.info("cached %d/%d pairs (%.0fs)", n, len(order), time.perf_counter() - t0)
        states.flush()
        meta_rows = [{**asdict(p), "span": span} for p, span in zip(pairs, spans, strict=True)]
        meta_path.write_text(json.dumps({"frozen": frozen, "count": len(pairs),
                                         "offsets": offsets.tolist(), "pairs": meta_rows},
                                        ensure_ascii=False), encoding="utf-8")  # fmt: skip
        return cls(np.load(states_path, mmap_mode="r"), offsets, meta_rows)


def _answer_tokens(splitter: PieceSpans, enc: Any, pair: Pair) -> list[int] | None:
    """[start, end] token indices of the answer in the sequence; [0, 0] (the no-answer span)
    for a negative; None when a positive's span is unknown (no span loss then)."""
    if not pair.label:
        return [0, 0]
    if not pair.answer:
        return None
    target = normalized(splitter.tokenizer, pair.answer)[1:]  # without the leading metaspace
    at = enc.passage.find(target)
    if at < 0:
        return None
    end = at + len(target)
    toks = [k for k, (a, b) in enumerate(enc.spans) if a < end and b > at]
    if not toks:
        return None
    return [enc.passage_start + toks[0], enc.passage_start + toks[-1]]


def train(e5: Any, cache: Cache, rows: list[int], cfg: TrainConfig, log: list[str]) -> Any:
    import torch

    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    top = build_top(torch, e5.hidden, e5.heads, e5.blocks[0]["fi"][0].shape[0], cfg.trained,
                    e5.eps)  # fmt: skip
    init_top_from_e5(top, e5, cfg.frozen)
    heads = [p for n, p in top.named_parameters() if not n.startswith("blocks.")]
    blocks = [p for n, p in top.named_parameters() if n.startswith("blocks.")]
    opt = torch.optim.AdamW([{"params": blocks, "lr": cfg.lr_blocks},
                             {"params": heads, "lr": cfg.lr_heads}], weight_decay=0.01)  # fmt: skip
    steps = cfg.epochs * math.ceil(len(rows) / cfg.batch)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(steps - warm, 1)))
    )
    top.train()
    step, t0 = 0, time.perf_counter()
    for epoch in range(cfg.epochs):
        # batches of similar lengths, in a seeded random order
        order = sorted(rows, key=lambda i: (cache.offsets[i + 1] - cache.offsets[i], rng.random()))
        batches = [order[n : n + cfg.batch] for n in range(0, len(order), cfg.batch)]
        rng.shuffle(batches)
        total = 0.0
        for idx in batches:
            x, valid = _batch(torch, cache, idx, e5.hidden)
            labels = torch.tensor([float(cache.meta[i]["label"]) for i in idx])
            logit, start, end = top(x, valid)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, labels)
            known = [k for k, i in enumerate(idx) if cache.meta[i]["span"] is not None]
            if known:
                tgt = torch.tensor([cache.meta[idx[k]]["span"] for k in known])
                ce = torch.nn.functional.cross_entropy
                span = ce(start[known], tgt[:, 0]) + ce(end[known], tgt[:, 1])
                loss = loss + cfg.span_weight * span * len(known) / len(idx)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(top.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            total += float(loss.detach())
        line = (f"  epoch {epoch + 1}/{cfg.epochs}: {len(batches)} steps, mean loss "
                f"{total / len(batches):.4f} ({time.perf_counter() - t0:.0f}s)")  # fmt: skip
        logger.info(line.strip())
        log.append(line.strip())
    top.eval()
    return top


def _batch(torch: Any, cache: Cache, idx: list[int], hidden: int) -> tuple[Any, Any]:
    return padded(torch, [np.asarray(cache.x(i), dtype=np.float32) for i in idx], hidden)


def score(top: Any, cache: Cache, rows: list[int], hidden: int) -> np.ndarray:
    import torch

    out = np.zeros(len(rows))
    order = sorted(
        range(len(rows)), key=lambda k: cache.offsets[rows[k] + 1] - cache.offsets[rows[k]]
    )
    with torch.inference_mode():
        for n in range(0, len(order), 64):
            ks = order[n : n + 64]
            x, valid = _batch(torch, cache, [rows[k] for k in ks], hidden)
            logit, _, _ = top(x, valid)
            out[ks] = logit.numpy()
    return out


def auc(pos: np.ndarray, neg: np.ndarray) -> float | None:
    """P(a score of ``pos`` > one of ``neg``), ties counted half (the Mann-Whitney statistic);
    None when either side is empty."""
    if not len(pos) or not len(neg):
        return None
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([pos, neg]))  # ties: their mean rank
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def figures(logits: np.ndarray, kinds: list[str], threshold: float) -> dict[str, Any]:
    """AUC of positives against each kind of negative, and the shares below ``threshold``."""
    k = np.asarray(kinds)
    pos = logits[k == "positive"]
    out: dict[str, Any] = {"positives": int(len(pos)),
                           "false_refusals": round(float(np.mean(pos < threshold)), 4)
                           if len(pos) else None}  # fmt: skip
    for kind in ("unanswerable", "near_miss"):
        neg = logits[k == kind]
        if len(neg):
            a = auc(pos, neg)
            out[kind] = {"n": int(len(neg)), "auc": None if a is None else round(a, 4),
                         "refused": round(float(np.mean(neg < threshold)), 4)}  # fmt: skip
    return out


def threshold_for(logits: np.ndarray, kinds: list[str], rate: float = 0.03) -> float:
    pos = logits[np.asarray(kinds) == "positive"]
    return float(np.quantile(pos, rate)) if len(pos) else 0.0


def run(
    data: Path,
    cache_dir: Path,
    out: Path | None,
    cfg: TrainConfig,
    lodo: Sequence[str] = (),
    full: bool = True,
) -> dict:
    """Train the reader on every domain's calibration half (``full``) and, for each domain in
    ``lodo``, a reader without it, measured on its check half."""
    from rag_app.e5_torch import TorchE5

    t0 = time.perf_counter()
    e5 = TorchE5(threads=None)
    pairs = build_pairs(data)
    logger.info("%d pairs from %s", len(pairs), data)
    cache = Cache.build(e5, pairs, cfg.frozen, cache_dir)
    logger.info("lower states cached (%.0fs)", time.perf_counter() - t0)
    meta = cache.meta
    calib = [i for i, m in enumerate(meta) if m["half"] == "calibration"]
    check = [i for i, m in enumerate(meta) if m["half"] == "check"]
    log: list[str] = []
    result: dict[str, Any] = {"config": asdict(cfg), "pairs": _counts(meta)}
    top = None
    if full:
        top = train(e5, cache, calib, cfg, log)
        logits = score(top, cache, check, e5.hidden)
        thr = threshold_for(logits, [meta[i]["kind"] for i in check])
        result["check"] = {
            d: figures(logits[[k for k, i in enumerate(check) if meta[i]["domain"] == d]],
                       [meta[i]["kind"] for i in check if meta[i]["domain"] == d], thr)
            for d in DOMAINS
        }  # fmt: skip
        result["threshold_3pct"] = round(thr, 4)
        result["train_seconds"] = round(time.perf_counter() - t0)
        logger.info("check halves: %s", json.dumps(result["check"], ensure_ascii=False))
        _write(out, top, e5, cfg, result, log)
    if lodo:
        result["lodo"] = {}
        for domain in lodo:
            logger.info("leave out %s", domain)
            rows = [i for i in calib if meta[i]["domain"] != domain]
            fold = train(e5, cache, rows, cfg, [])
            seen = [i for i in check if meta[i]["domain"] != domain]
            fthr = threshold_for(score(fold, cache, seen, e5.hidden),
                                 [meta[i]["kind"] for i in seen])  # fmt: skip
            held = [i for i in check if meta[i]["domain"] == domain]
            fig = figures(score(fold, cache, held, e5.hidden), [meta[i]["kind"] for i in held],
                          fthr)  # fmt: skip
            result["lodo"][domain] = fig
            logger.info("%s left out: %s", domain, json.dumps(fig))
        if top is not None:
            _write(out, top, e5, cfg, result, log)
    return result


def _write(out: Path | None, top: Any, e5: Any, cfg: TrainConfig, result: dict, log: list) -> None:
    result["log"] = log
    if out is None:
        return
    save_head(out, top, e5, {"frozen": cfg.frozen, "trained": cfg.trained,
                             "ffn": int(e5.blocks[0]["fi"][0].shape[0]),
                             "threshold_3pct": result["threshold_3pct"], "figures": result})  # fmt: skip
    out.with_suffix(".json").write_text(json.dumps(result, ensure_ascii=False, indent=1),
                                        encoding="utf-8")  # fmt: skip
    logger.info("wrote %s (%.1f MB)", out, out.stat().st_size / 1e6)


def _counts(meta: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in meta:
        key = f"{m['domain']}/{m['kind']}/{m['half']}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def default_out() -> Path:
    return DEFAULT_HEAD
