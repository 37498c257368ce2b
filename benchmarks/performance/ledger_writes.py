"""Ledger write cost per ingested file, in a large knowledge base.

    .venv/bin/python benchmarks/performance/ledger_writes.py [--label after] [--files 30]

Ingesting one file writes the ledger three times: ``begin_document``, ``commit_version`` (its
chunk and keyword rows, the version flip) and ``delete_inactive_chunks`` (the previous version's
rows). Each of them used to delete keyword rows with ``DELETE FROM chunk_fts WHERE doc_id = …``:
FTS5 cannot index its UNINDEXED columns, so that read the whole keyword table, on every file.

This copies the ledgers of the query-scale knowledge bases (``benchmarks/.cache/scale-*``, built
by benchmarks/performance/query_scale.py from ../shared/data) to a temporary directory, opens them (the first
open of a ledger written before ``chunk_fts_rows`` fills it: timed as ``open_seconds``), and then
re-ingests ``--files`` of their documents at the ledger level: a new version of 33 chunk rows
with real tokens (begin + commit + drop of the old version), then deletes one other document.
Reported per size: median and p90 milliseconds per file and per delete. Results under
``--label`` in benchmarks/results/ledger_writes.json (``before``: run from a checkout of the code
before the change with PYTHONPATH pointing at it). Skips sizes whose KB is not built.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import CACHE, RESULTS, machine, write_json  # noqa: E402
from sqlalchemy import text  # noqa: E402

from rag_app.store.ledger import Ledger  # noqa: E402
from rag_app.text.tokenizer import tokenize  # noqa: E402

ROWS_PER_FILE = 33


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def built(size: int) -> Path | None:
    found = sorted(p for p in CACHE.glob(f"scale-{size}-*") if (p / "BUILT").exists())
    return found[-1] / "ledger.db" if found else None


def rows(doc_id: str, version: int, texts: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "chunk_id": f"{doc_id}:{version}:{i}",
            "chunk_index": i,
            "text": body,
            "title_path": "",
            "start_char": 0,
            "end_char": len(body),
            "prefix_chars": 0,
            "suffix_chars": 0,
            "token_count": len(body),
            "block_types": "paragraph",
            "keywords": " ".join(tokenize(body)),
        }
        for i, body in enumerate(texts)
    ]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(db: Path, files: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    ledger = Ledger(f"sqlite:///{db}", keyword_cache_postings=0)
    open_s = time.perf_counter() - t0
    try:
        with ledger.engine.connect() as conn:
            docs = [
                (r[0], r[1])
                for r in conn.execute(
                    text("SELECT doc_id, tenant FROM documents ORDER BY doc_id LIMIT :n"),
                    {"n": 2 * files},
                )
            ]
            texts = [
                r[0]
                for r in conn.execute(
                    text("SELECT text FROM chunks ORDER BY chunk_id LIMIT :n"),
                    {"n": ROWS_PER_FILE},
                )
            ]
            total = int(conn.execute(text("SELECT count(*) FROM chunks")).scalar_one())
        per_file, per_delete = [], []
        for (doc_id, tenant), (gone, _) in zip(docs[:files], docs[files:], strict=False):
            new_rows = rows(doc_id, 0, texts)  # tokenized outside the timing
            t0 = time.perf_counter()
            version = ledger.begin_document(
                doc_id=doc_id, tenant=tenant, source="/x", rel_path=doc_id, doc_type="md", size=1
            )
            for r in new_rows:
                r["chunk_id"] = f"{doc_id}:{version}:{r['chunk_index']}"
            ledger.commit_version(
                doc_id=doc_id,
                tenant=tenant,
                version=version,
                rows=new_rows,
                content_hash="h",
                fingerprint="f",
                doc_type="md",
                title=None,
                source="/x",
                size=1,
            )
            ledger.delete_inactive_chunks(doc_id)
            per_file.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            ledger.delete_document(gone)
            per_delete.append((time.perf_counter() - t0) * 1000)
    finally:
        ledger.close()
    return {
        "chunks": total,
        "open_seconds": round(open_s, 3),
        "files": len(per_file),
        "file_ms": {
            "median": round(statistics.median(per_file), 1),
            "p90": round(pct(per_file, 0.9), 1),
        },
        "delete_ms": {
            "median": round(statistics.median(per_delete), 1),
            "p90": round(pct(per_delete, 0.9), 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--label", default="after")
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 100000])
    parser.add_argument("--json", type=Path, default=RESULTS / "ledger_writes.json")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    for size in args.sizes:
        source = built(size)
        if source is None:
            log(f"scale-{size}: not built (run benchmarks/performance/query_scale.py); skipped")
            continue
        with tempfile.TemporaryDirectory(prefix="rag-ledger-writes-") as tmp:
            db = Path(tmp) / "ledger.db"
            shutil.copyfile(source, db)
            for suffix in ("-wal", "-shm"):
                if Path(f"{source}{suffix}").exists():
                    shutil.copyfile(f"{source}{suffix}", f"{db}{suffix}")
            log(f"scale-{size}: measuring {args.files} files …")
            out[str(size)] = measure(db, args.files)
            log(f"  {out[str(size)]}")
    if not out:
        log("no scale KB built: nothing measured")
        return
    import json

    previous: dict[str, Any] = {}
    if args.json.exists():
        previous = json.loads(args.json.read_text()).get("runs", {})
    previous[args.label] = out
    write_json(
        args.json,
        {
            "benchmark": "ledger_writes",
            "machine": machine(),
            "rows_per_file": ROWS_PER_FILE,
            "runs": previous,
        },
    )
    log(f"wrote {args.json}")


if __name__ == "__main__":
    main()
