"""Upload-to-SUCCESS latency of one small upload at a time on an otherwise idle ``rag serve``.

    .venv/bin/python benchmarks/performance/upload_latency.py                  # worker process and threads
    .venv/bin/python benchmarks/performance/upload_latency.py --uploads 20 --modes processes

Setup (not timed): the sample KB template of service_load.py (``data/knowledge`` ingested, an
editor key), copied into a fresh KB per mode and served by ``rag serve`` (``processes``: one
``rag worker`` child, the default; ``threads``: ``--workers-in-process``). After /api/health
answers, the server is left ``--settle`` seconds so the worker has loaded its model.

Timed: ``--uploads`` generated Markdown documents (~0.6 KB, unique), one at a time, each after a
random 0.2-1.2 s pause (so uploads land at any point of a polling interval). Each upload's
latency is from its 202 to the document's ``updated_at`` (set when its version is committed; same
clock), and ``first`` is the first upload after start-up (parse server start, cold caches).
Writes benchmarks/results/upload_latency.json (or ``--json PATH``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

import httpx  # noqa: E402
from common import RESULTS, machine, write_json  # noqa: E402
from service_clients import free_port, log, make_document, parse_time  # noqa: E402
from service_load import Server, build_template  # noqa: E402

from rag_app.eval.metrics import percentile  # noqa: E402


def one_upload(
    http: httpx.Client, text: str, name: str, timeout: float = 60.0
) -> tuple[str, float]:
    """The doc id and seconds from the 202 to its committed version (``updated_at``)."""
    response = http.post("/api/documents", files={"file": (name, text.encode(), "text/markdown")})
    accepted = time.time()
    response.raise_for_status()
    doc_id = response.json()["doc_id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = http.get(f"/api/documents/{doc_id}").json()
        if body["status"] in ("SUCCESS", "FAILED"):
            if body["status"] != "SUCCESS":
                raise RuntimeError(f"upload {name} failed: {body.get('error')}")
            done = parse_time(body.get("updated_at"))
            return doc_id, max(0.0, (done or time.time()) - accepted)
        time.sleep(0.02)
    raise RuntimeError(f"upload {name} not done after {timeout:.0f} s")


def job_times(kb: Path, doc_ids: list[str]) -> tuple[list[float], list[float]]:
    """Per job: enqueue → claim (queue wait) and claim → finish (the worker's run)."""
    marks = ",".join("?" * len(doc_ids))
    with sqlite3.connect(kb / "ledger.db") as db:
        rows = db.execute(
            f"SELECT created_at, started_at, finished_at FROM jobs WHERE doc_id IN ({marks})",
            doc_ids,
        ).fetchall()
    return [s - c for c, s, _ in rows], [f - s for _, s, f in rows]


def run_mode(
    template: Path, key: str, root: Path, mode: str, args: argparse.Namespace
) -> dict[str, Any]:
    kb = root / f"kb-{mode}"
    shutil.copytree(template, kb)
    if mode == "threads":
        os.environ["RAG_WORKERS_IN_PROCESS"] = "true"
    else:
        os.environ.pop("RAG_WORKERS_IN_PROCESS", None)
    server = Server(kb, free_port(), 1, root / f"serve-{mode}.log")
    rng = random.Random(args.seed)
    latencies: list[float] = []
    doc_ids: list[str] = []
    try:
        server.wait_ready()
        time.sleep(args.settle)
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=60.0) as http:
            for i in range(args.uploads):
                time.sleep(rng.uniform(0.2, 1.2))
                tag = f"{mode}-{i}-{rng.randint(0, 10**6)}"
                doc_id, seconds = one_upload(http, make_document(rng, tag), f"lat-{tag}.md")
                doc_ids.append(doc_id)
                latencies.append(seconds)
                log(f"{mode} upload {i}: {latencies[-1] * 1000:.0f} ms")
    finally:
        server.stop()
    rest = latencies[1:]
    wait, work = job_times(kb, doc_ids[1:])
    return {
        "mode": mode,
        "uploads": len(latencies),
        "first_ms": round(latencies[0] * 1000, 1),
        "p50_ms": round(percentile(rest, 50) * 1000, 1),
        "p95_ms": round(percentile(rest, 95) * 1000, 1),
        "max_ms": round(max(rest) * 1000, 1),
        "queue_wait_p50_ms": round(percentile(wait, 50) * 1000, 1),
        "job_run_p50_ms": round(percentile(work, 50) * 1000, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--uploads", type=int, default=15)
    parser.add_argument("--modes", default="processes,threads")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds after start-up")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--label", default="", help="stored with the results (e.g. before)")
    parser.add_argument("--json", type=Path, default=RESULTS / "upload_latency.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="upload_latency-") as tmp:
        root = Path(tmp)
        template, key = build_template(root)
        runs = [run_mode(template, key, root, m, args) for m in args.modes.split(",")]
    for run in runs:
        print(
            f"{run['mode']:>9}: first {run['first_ms']:.0f} ms, p50 {run['p50_ms']:.0f} ms, "
            f"p95 {run['p95_ms']:.0f} ms, max {run['max_ms']:.0f} ms ({run['uploads']} uploads; "
            f"p50 queue wait {run['queue_wait_p50_ms']:.0f} ms, job {run['job_run_p50_ms']:.0f} ms)"
        )
    write_json(
        args.json,
        {
            "benchmark": "upload_latency",
            "label": args.label,
            "machine": machine(),
            "command": " ".join(["benchmarks/performance/upload_latency.py", *sys.argv[1:]]),
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
