"""Service under load: a real ``rag serve`` process, N concurrent clients asking and uploading.

    .venv/bin/python benchmarks/performance/service_load.py                      # 4 clients, 30 s
    .venv/bin/python benchmarks/performance/service_load.py --clients 1,4,8      # one run per client count

Setup (not timed): the bundled sample knowledge base (``data/knowledge``) is ingested once into a
template KB with ``rag ingest``, an editor API key is created with ``rag keys create``, and for
each client count the template is copied into a fresh KB served by ``rag serve`` as a subprocess
on a free local port (``--workers`` ingestion worker processes of the server, default 1 like the
service). ``--multi-process`` runs the multi-process deployment instead (service_multiprocess.py).
After /api/health answers, a few questions warm the server up.

Load (timed): ``--clients`` threads, each with its own httpx client, loop for ``--duration``
seconds; each request is an upload with probability ``--upload-share`` (a small generated
Markdown document with unique content, POST /api/documents, 202 expected) and otherwise a
question from data/eval/sample_qa.jsonl (POST /api/ask, top_k 5). Per operation: requests,
throughput (completed requests per second of the load window), p50/p95/max latency and errors
(non-2xx answers or exceptions). After the window the uploaded documents are polled (GET
/api/documents/{id}) until they are done or ``--drain`` seconds pass: how many reached SUCCESS
by the end of the load window and after draining, and the time from the upload's 202 to SUCCESS
(the document's ``updated_at``, set when the version is committed; same machine clock), p50/p95.

Client threads and the server share the machine: on 2 cores the clients' own CPU use is part of
the figures. Writes benchmarks/results/service_load.json (or ``--json PATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

import httpx  # noqa: E402
from common import RESULTS, ROOT, machine, write_json  # noqa: E402
from service_clients import (  # noqa: E402
    SAMPLE_KB,
    SAMPLE_QA,
    ClientState,
    client_loop,
    env,
    free_port,
    log,
    parse_time,
    poll_uploads,
    rag_cmd,
    summarize_op,
)

from rag_app.eval.metrics import percentile  # noqa: E402


class Server:
    """``rag serve`` on a copy of the template KB."""

    def __init__(self, kb: Path, port: int, workers: int, logfile: Path) -> None:
        self.kb, self.port, self.logfile = kb, port, logfile
        self.base_url = f"http://127.0.0.1:{port}"
        self.log = logfile.open("wb")
        cmd = [*rag_cmd(), "serve", "--kb", str(kb), "--port", str(port), "--workers", str(workers)]
        self.proc = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env(), start_new_session=True
        )

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}): {self.tail()}")
            try:
                if httpx.get(self.base_url + "/api/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"server not ready after {timeout:.0f}s: {self.tail()}")

    def tail(self) -> str:
        self.log.flush()
        return self.logfile.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def build_template(root: Path) -> tuple[Path, str]:
    kb = root / "template"
    t0 = time.perf_counter()
    subprocess.run(
        [*rag_cmd(), "ingest", str(SAMPLE_KB), "--kb", str(kb), "--json"],
        check=True,
        env=env(),
        stdout=subprocess.DEVNULL,
    )
    out = subprocess.run(
        [
            *rag_cmd(),
            "keys",
            "create",
            "--tenant",
            "default",
            "--role",
            "editor",
            "--kb",
            str(kb),
            "--name",
            "service_load",
            "--json",
        ],
        check=True,
        env=env(),
        capture_output=True,
        text=True,
    )
    key = json.loads(out.stdout)["key"]
    log(f"template KB ingested from {SAMPLE_KB} in {time.perf_counter() - t0:.1f}s")
    return kb, key


def run_level(
    template: Path, key: str, root: Path, args: argparse.Namespace, clients: int
) -> dict[str, Any]:
    kb = root / f"kb-{clients}"
    shutil.copytree(template, kb)
    questions = [
        json.loads(line)["question"] for line in SAMPLE_QA.read_text().splitlines() if line
    ]
    server = Server(kb, free_port(), args.workers, root / f"server-{clients}.log")
    try:
        server.wait_ready()
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            for q in questions[:3]:  # warm-up: model load, jieba, caches (not timed)
                http.post("/api/ask", json={"question": q, "top_k": 5}).raise_for_status()
        load_before = os.getloadavg()
        log(f"{clients} client(s), {args.duration:g}s, upload share {args.upload_share:g} …")
        states = [ClientState() for _ in range(clients)]
        start = time.perf_counter()
        deadline = start + args.duration
        wall_start = time.time()
        threads = [
            threading.Thread(
                target=client_loop,
                args=(
                    server.base_url,
                    key,
                    questions,
                    args.upload_share,
                    deadline,
                    args.seed * 1000 + i,
                    states[i],
                ),
                daemon=True,
            )
            for i in range(clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        window = time.perf_counter() - start
        wall_end = wall_start + window
        load_after = os.getloadavg()
        records = [r for s in states for r in s.records]
        uploads = [u for s in states for u in s.uploads]
        log(f"  {len(records)} requests in {window:.1f}s; waiting for {len(uploads)} upload(s) …")
        docs = poll_uploads(server.base_url, key, uploads, time.monotonic() + args.drain)
        exited = server.proc.poll()
    finally:
        server.stop()
        shutil.rmtree(kb, ignore_errors=True)

    to_success: list[float] = []
    by_end = 0
    statuses: dict[str, int] = {}
    for u in uploads:
        doc = docs.get(u.doc_id) or {}
        status = doc.get("status", "UNKNOWN")
        statuses[status] = statuses.get(status, 0) + 1
        if status == "SUCCESS":
            done = parse_time(doc.get("updated_at"))
            if done is not None:
                to_success.append(max(0.0, done - u.accepted_at) * 1000)
                by_end += done <= wall_end
    result: dict[str, Any] = {
        "clients": clients,
        "duration_s": args.duration,
        "window_s": round(window, 2),
        "upload_share": args.upload_share,
        "server_workers": args.workers,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "total": summarize_op(records, window),
        "ask": summarize_op([r for r in records if r.op == "ask"], window),
        "upload": summarize_op([r for r in records if r.op == "upload"], window),
        "ingestion": {
            "accepted": len(uploads),
            "success_by_end_of_load": by_end,
            "success_after_drain": statuses.get("SUCCESS", 0),
            "final_status": statuses,
            "drain_limit_s": args.drain,
            "upload_to_success_p50_ms": round(percentile(to_success, 50), 1)
            if to_success
            else None,
            "upload_to_success_p95_ms": round(percentile(to_success, 95), 1)
            if to_success
            else None,
            "upload_to_success_max_ms": round(max(to_success), 1) if to_success else None,
        },
    }
    if exited is not None:
        result["server_exited"] = exited
    return result


def print_table(runs: list[dict[str, Any]]) -> None:
    print(
        f"{'clients':>7} {'op':6} {'req':>5} {'req/s':>6} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'max ms':>8} {'err':>4}"
    )
    for run in runs:
        for op in ("ask", "upload"):
            s = run[op]
            fmt = lambda v: f"{v:8.0f}" if v is not None else f"{'-':>8}"  # noqa: E731
            print(
                f"{run['clients']:7} {op:6} {s['requests']:5} {s['throughput_rps']:6.2f} "
                f"{fmt(s['p50_ms'])} {fmt(s['p95_ms'])} {fmt(s['max_ms'])} {s['errors']:4}"
            )
        ing = run["ingestion"]
        p50, p95 = ing["upload_to_success_p50_ms"], ing["upload_to_success_p95_ms"]
        print(
            f"{'':7} ingest accepted {ing['accepted']}, SUCCESS by end {ing['success_by_end_of_load']}"
            f", after drain {ing['success_after_drain']}; upload→SUCCESS p50 "
            f"{p50 if p50 is not None else '-'} ms, p95 {p95 if p95 is not None else '-'} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--clients", default="4", help="concurrent clients; a comma list runs each (e.g. 1,4,8)"
    )
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load per run")
    parser.add_argument(
        "--upload-share", type=float, default=0.1, help="share of requests that upload (0-1)"
    )
    parser.add_argument("--workers", type=int, default=1, help="ingestion workers of the server")
    parser.add_argument(
        "--drain", type=float, default=120.0, help="max seconds to wait for uploads to finish"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--multi-process",
        action="store_true",
        help="the multi-process deployment instead: CLI ingest + 2 workers + a server at once "
        "(benchmarks/performance/service_multiprocess.py; first --clients value)",
    )
    parser.add_argument("--cli-files", type=int, default=40, help="--multi-process: CLI files")
    parser.add_argument("--json", type=Path, default=None, help="results file")
    args = parser.parse_args()
    levels = [int(x) for x in str(args.clients).split(",") if x.strip()]
    if not levels or min(levels) < 1:
        parser.error("--clients needs positive integers")
    if not 0.0 <= args.upload_share <= 1.0:
        parser.error("--upload-share must be within 0..1")
    if not SAMPLE_KB.is_dir() or not SAMPLE_QA.is_file():
        print(f"skipped: sample knowledge base or questions not found ({SAMPLE_KB}, {SAMPLE_QA})")
        return

    if args.multi_process:
        multi_process(args, levels[0])
        return
    args.json = args.json or RESULTS / "service_load.json"
    runs = []
    with tempfile.TemporaryDirectory(prefix="rag-service-load-") as tmp:
        root = Path(tmp)
        template, key = build_template(root)
        for clients in levels:
            runs.append(run_level(template, key, root, args, clients))
    print_table(runs)
    data = {
        "benchmark": "service_load",
        "machine": machine(),
        "setup": {
            "server": (
                f"rag serve subprocess (uvicorn API process with {args.workers} worker thread(s): "
                "RAG_WORKERS_IN_PROCESS)"
                if os.environ.get("RAG_WORKERS_IN_PROCESS", "").lower() in ("1", "true", "yes")
                else f"rag serve subprocess (uvicorn API process, {args.workers} worker "
                "process(es) and a chroma run child it starts)"
            )
            + " on a copy of the ingested "
            "data/knowledge sample KB; clients are threads in the benchmark process (same machine)",
            "questions": str(SAMPLE_QA.relative_to(ROOT)),
            "upload": "generated Markdown, ~0.6 KB, unique content, POST /api/documents",
            "ask": "POST /api/ask top_k=5 "
            + (
                "(LLM answers: RAG_LLM_BASE_URL is set)"
                if os.environ.get("RAG_LLM_BASE_URL")
                else "(extractive answers, no LLM configured)"
            ),
            "command": "benchmarks/performance/service_load.py " + " ".join(sys.argv[1:]),
        },
        "runs": runs,
    }
    write_json(args.json, data)
    print(f"wrote {args.json}")


def multi_process(args: argparse.Namespace, clients: int) -> None:
    from service_multiprocess import run_multi_process

    args.clients = clients
    with tempfile.TemporaryDirectory(prefix="rag-service-multi-") as tmp:
        os.chmod(tmp, 0o755)  # a PostgreSQL server may run as another user below it
        run = run_multi_process(args, Path(tmp))
    print(json.dumps({k: run[k] for k in ("ask", "upload", "checks")}, indent=1))
    path = args.json or RESULTS / "service_load_multiprocess.json"
    data = {
        "benchmark": "service_load --multi-process",
        "machine": machine(),
        "command": "benchmarks/performance/service_load.py " + " ".join(sys.argv[1:]),
        "run": run,
    }
    write_json(path, data)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
