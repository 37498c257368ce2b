"""The multi-process deployment under load: CLI ingest + two workers + a server at once.

    .venv/bin/python benchmarks/performance/service_load.py --multi-process      # 4 clients, 30 s, 40 CLI files

Run by ``service_load.py --multi-process`` (issue 16). Setup (not timed): a throwaway PostgreSQL
server (``initdb`` + ``pg_ctl``, as in tests/store/pg.py; without its binaries the ledger is
SQLite in the shared KB directory, and the results say so) and a ``chroma run`` server; every
process gets ``RAG_DATABASE_URL``, ``RAG_CHROMA_URL`` and one ``RAG_KB_DIR`` (uploads). The
sample KB is ingested with ``rag ingest`` and an editor key created. Then ``rag serve --workers
0`` and two ``rag worker`` processes start.

Load (timed): the clients of service_load.py (asks and uploads through the API) and, at the
same moment, ``rag ingest`` of ``--cli-files`` generated Markdown files in another process.
Afterwards the uploads are drained, every process is stopped, and the KB is checked: requests
without error, the CLI report without failures, every document SUCCESS and the document count
= sample + accepted uploads + CLI files, the ledger's chunk count = the vectors in Chroma, and
``rag doctor --dry-run`` clean (no orphan or missing vectors, no stale rows) with self-recall
(every active chunk queried by its own vector) >= 0.99.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from service_clients import (
    SAMPLE_KB,
    SAMPLE_QA,
    ClientState,
    client_loop,
    env,
    free_port,
    log,
    make_document,
    poll_uploads,
    rag_cmd,
    summarize_op,
)

from tests.store.pg import PgServer, _run_as, find_pg_bin, unavailable_reason

CHROMA_EXE = Path(sys.executable).with_name("chroma")


def _start_chroma(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (root / "chroma.log").open("wb") as out:
        proc = subprocess.Popen(
            [str(CHROMA_EXE), "run", "--path", str(root / "chroma"), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env(),
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/api/v2/heartbeat", timeout=2).status_code == 200:
                return proc, url
        time.sleep(0.3)
    raise RuntimeError("chroma server did not start; see chroma.log")


def _stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGINT) -> int | None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def _rag(environ: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [*rag_cmd(), *args, "--json"], env=environ, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(
            f"rag {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}"
        )
    return json.loads(done.stdout)


def _wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"rag serve exited ({proc.returncode})")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/api/health", timeout=2).status_code == 200:
                return
        time.sleep(0.3)
    raise RuntimeError("rag serve not ready")


def _drain_queue(url: str, until: float) -> dict[str, int]:
    while True:
        queue = httpx.get(url + "/api/health", timeout=30).json()["queue"]
        if queue["pending"] + queue["processing"] == 0 or time.monotonic() > until:
            return dict(queue)
        time.sleep(0.5)


def run_multi_process(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    pg: PgServer | None = None
    reason = unavailable_reason()
    chroma, chroma_url = _start_chroma(root)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        kb = root / "kb"
        environ = env()
        environ.update(RAG_KB_DIR=str(kb), RAG_CHROMA_URL=chroma_url)
        environ["NO_PROXY"] = environ["no_proxy"] = "127.0.0.1,localhost"
        if reason is None:
            bindir, prefix = find_pg_bin(), _run_as()
            assert bindir is not None and prefix is not None
            pg = PgServer(bindir, prefix)
            pg.start()
            environ["RAG_DATABASE_URL"] = pg.url(pg.create_database())
            ledger = "PostgreSQL (throwaway initdb server, fsync off)"
        else:
            ledger = f"SQLite in the KB directory (PostgreSQL unavailable: {reason})"
        t0 = time.perf_counter()
        sample = _rag(environ, "ingest", str(SAMPLE_KB))
        key = _rag(environ, "keys", "create", "--tenant", "default", "--role", "editor")["key"]
        log(f"sample KB ingested in {time.perf_counter() - t0:.1f}s; ledger: {ledger}")
        rng = random.Random(args.seed)
        cli_docs = root / "cli_docs"
        cli_docs.mkdir()
        for i in range(args.cli_files):
            (cli_docs / f"cli-{i:03d}.md").write_text(make_document(rng, f"cli-{i}"), "utf-8")

        port = free_port()
        url = f"http://127.0.0.1:{port}"
        logs = [(root / f"{name}.log").open("wb") for name in ("serve", "worker-1", "worker-2")]
        serve_cmd = [*rag_cmd(), "serve", "--port", str(port), "--workers", "0"]
        for cmd, out in zip(
            [serve_cmd, [*rag_cmd(), "worker"], [*rag_cmd(), "worker"]], logs, strict=True
        ):
            procs.append(
                subprocess.Popen(
                    cmd, env=environ, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            )
        _wait_ready(url, procs[0])
        questions = [json.loads(x)["question"] for x in SAMPLE_QA.read_text().splitlines() if x]
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as http:
            for q in questions[:3]:  # warm-up (not timed)
                http.post("/api/ask", json={"question": q, "top_k": 5}, timeout=120)

        log(f"{args.clients} clients + rag ingest of {args.cli_files} files, {args.duration:g}s …")
        cli_result: dict[str, Any] = {}

        def cli_ingest() -> None:
            t = time.perf_counter()
            cli_result["report"] = _rag(environ, "ingest", str(cli_docs))
            cli_result["seconds"] = round(time.perf_counter() - t, 1)

        states = [ClientState() for _ in range(args.clients)]
        start = time.perf_counter()
        deadline = start + args.duration
        threads = [threading.Thread(target=cli_ingest, daemon=True)] + [
            threading.Thread(
                target=client_loop,
                args=(url, key, questions, args.upload_share, deadline, args.seed * 1000 + i, s),
                daemon=True,
            )
            for i, s in enumerate(states)
        ]
        for t in threads:
            t.start()
        for t in threads[1:]:
            t.join()
        window = time.perf_counter() - start
        threads[0].join()
        records = [r for s in states for r in s.records]
        uploads = [u for s in states for u in s.uploads]
        docs_state = poll_uploads(url, key, uploads, time.monotonic() + args.drain)
        queue_left = _drain_queue(url, time.monotonic() + args.drain)
        exits = [_stop(p, signal.SIGINT if i == 0 else signal.SIGTERM) for i, p in enumerate(procs)]
        for out in logs:
            out.close()

        listed = _rag(environ, "docs", "--all-tenants")
        health = _rag(environ, "doctor", "--dry-run", "--sample", "100000")
    finally:
        for p in procs:
            _stop(p, signal.SIGKILL)
        _stop(chroma, signal.SIGTERM)
        if pg is not None:
            pg.cleanup()

    cli_report = cli_result.get("report", {})
    statuses: dict[str, int] = {}
    for doc in listed:
        statuses[doc["status"]] = statuses.get(doc["status"], 0) + 1
    sample_docs = sum(f["status"] == "SUCCESS" for f in sample["files"])
    expected_docs = sample_docs + len(uploads) + args.cli_files
    chunks = sum(int(doc["chunk_count"]) for doc in listed)
    upload_final = [(d or {}).get("status") for d in docs_state.values()]
    checks = {
        "request_errors": sum(not r.ok for r in records),
        "cli_failed": sum(f.get("status") != "SUCCESS" for f in cli_report.get("files") or [{}]),
        "documents": len(listed),
        "documents_expected": expected_docs,
        "documents_not_success": len(listed) - statuses.get("SUCCESS", 0),
        "uploads_success": upload_final.count("SUCCESS"),
        "chunks_in_ledger": chunks,
        "active_chunks": health["active_chunks"],
        "vectors": health["vectors"],
        "orphan_vectors": health["orphan_vectors"],
        "missing_vectors": health["missing_vectors"],
        "inactive_chunk_rows": health["inactive_chunk_rows"],
        "stale_keyword_rows": health["stale_keyword_rows"],
        "self_recall": health["self_recall"],
        "self_recall_sampled": health["self_recall_sampled"],
        "queue_left": queue_left,
        "process_exit_codes": {"serve": exits[0], "worker-1": exits[1], "worker-2": exits[2]},
    }
    checks["ok"] = (
        checks["request_errors"] == 0
        and checks["cli_failed"] == 0
        and len(listed) == expected_docs
        and checks["documents_not_success"] == 0
        and chunks == health["active_chunks"] == health["vectors"]
        and health["orphan_vectors"] == health["missing_vectors"] == 0
        and health["inactive_chunk_rows"] == health["stale_keyword_rows"] == 0
        and health["self_recall"] >= 0.99
    )
    return {
        "deployment": "multi-process: rag serve --workers 0 + 2 rag worker + rag ingest (CLI) at "
        "once; Chroma server (chroma run); ledger " + ledger,
        "clients": args.clients,
        "duration_s": args.duration,
        "window_s": round(window, 2),
        "upload_share": args.upload_share,
        "cli_files": args.cli_files,
        "cli_ingest_s": cli_result.get("seconds"),
        "total": summarize_op(records, window),
        "ask": summarize_op([r for r in records if r.op == "ask"], window),
        "upload": summarize_op([r for r in records if r.op == "upload"], window),
        "checks": checks,
    }
