"""`rag worker` processes share one queue: every job runs exactly once.

Two worker processes on one ledger (SQLite here; PostgreSQL uses FOR UPDATE SKIP LOCKED) and one
Chroma server (a local persistent Chroma is not safe across processes: several processes need the
server, as in production).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rag_app.store.jobs import JobQueue
from rag_app.store.ledger import Ledger
from tests.store.conftest import unique_collection

DOC = """# 制度{n}

## 第一条 适用范围

本制度第{n}号适用于全体员工，编号 R-{n:03d}。

## 第二条 标准

第{n}号制度规定的补贴标准为每月{amount}元。
"""


def test_two_worker_processes_run_each_job_exactly_once(tmp_path: Path, chroma_server: str) -> None:
    from rag_app.ingestion.files import make_doc_id

    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    ledger = Ledger(f"sqlite:///{kb_dir / 'ledger.db'}")
    queue = JobQueue(ledger)
    files = tmp_path / "files"
    files.mkdir()
    doc_ids = []
    for n in range(10):
        path = files / f"制度{n}.md"
        path.write_text(DOC.format(n=n, amount=100 + n), encoding="utf-8")
        doc_id = make_doc_id("acme", path.name)
        ledger.register_pending(
            doc_id=doc_id,
            tenant="acme",
            source=str(path),
            rel_path=path.name,
            doc_type="markdown",
            size=path.stat().st_size,
        )
        queue.enqueue(
            doc_id=doc_id, tenant="acme", kind="ingest", path=str(path), rel_path=path.name
        )
        doc_ids.append(doc_id)

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(
        HF_HUB_OFFLINE="1",
        ANONYMIZED_TELEMETRY="False",
        RAG_KB_DIR=str(kb_dir),
        RAG_CHROMA_URL=chroma_server,
        RAG_COLLECTION=unique_collection(),
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "rag_app.cli", "worker", "--once"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    logs = [w.communicate(timeout=300)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], logs

    jobs = queue.latest_for(doc_ids)
    assert len(jobs) == 10
    assert all(j.status == "SUCCESS" and j.attempts == 1 for j in jobs.values()), jobs
    counts = [int(log.rsplit("processed ", 1)[1].split()[0]) for log in logs]
    print("jobs per worker:", counts)
    processed = sum(counts)
    assert processed == 10  # the two workers' counts add up: no job ran twice
    for doc_id in doc_ids:
        doc = ledger.get_document(doc_id)
        assert doc is not None and doc.status.value == "SUCCESS" and doc.version == 1
    ledger.close()
