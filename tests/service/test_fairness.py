"""Fair scheduling: tenants take turns, and an express lane lets small files pass a big one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rag_app.config import Settings
from rag_app.service.worker import Worker
from rag_app.store.jobs import JobQueue, JobStatus, PendingDocument
from rag_app.store.ledger import Ledger
from rag_app.types import FileResult

MB = 1024 * 1024


def _queue(tmp_path: Path) -> JobQueue:
    return JobQueue(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}"))


def _add(queue: JobQueue, doc_id: str, tenant: str, size: int = 100, path: str = "") -> int:
    job = queue.enqueue(
        doc_id=doc_id,
        tenant=tenant,
        kind="ingest",
        path=path or f"/x/{doc_id}",
        rel_path=f"{doc_id}.md",
        document=PendingDocument(doc_type="markdown", size=size),
    )
    return job.job_id


def _take(queue: JobQueue, worker: str = "w", express: int | None = None) -> str | None:
    job = queue.claim(worker, express_max_bytes=express)
    return None if job is None else job.doc_id


def _done(queue: JobQueue, doc_id: str, worker: str = "w") -> None:
    job = queue.latest_for([doc_id])[doc_id]
    assert queue.finish(job.job_id, JobStatus.SUCCESS, worker=worker)


def test_tenants_take_turns_rather_than_first_come_first_served(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    for i in range(3):
        _add(queue, f"a{i}", "A")
    _add(queue, "b0", "B")  # queued after all of A's
    order = []
    while (doc := _take(queue)) is not None:
        order.append(doc)
        _done(queue, doc)
    assert order == ["a0", "b0", "a1", "a2"]  # B's turn comes after A's first, not its last


def test_a_tenant_with_a_job_in_progress_comes_after_one_without(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    _add(queue, "a0", "A")
    _add(queue, "a1", "A")
    _add(queue, "b0", "B")
    assert _take(queue, "w1") == "a0"  # in progress
    assert _take(queue, "w2") == "b0"  # older a1 waits: A already has a worker
    assert _take(queue, "w3") == "a1"


def test_the_express_lane_takes_only_small_files_of_idle_tenants(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    _add(queue, "a-big", "A", size=50 * MB)
    _add(queue, "a-small", "A")
    _add(queue, "b-big", "B", size=50 * MB)
    assert _take(queue, "express", express=2 * MB) == "a-small"  # the big ones are not its
    _done(queue, "a-small", "express")
    assert _take(queue, "main") == "b-big"  # A just had its turn
    _add(queue, "b-small", "B")
    _add(queue, "c-small", "C")
    # B has a job in progress: the express lane passes its small file over for C's
    assert _take(queue, "express", express=2 * MB) == "c-small"
    assert _take(queue, "express2", express=2 * MB) is None  # a-big too big, b-small B's


class _SlowBigKb:
    """A knowledge base whose big file takes until released (the worker needs only these)."""

    def __init__(self, kb_dir: Path) -> None:
        self.settings = Settings(kb_dir=kb_dir)
        self.release = threading.Event()
        self.done: dict[str, float] = {}
        self.ingestion = self.documents = self  # the facade's parts the worker uses

    def ingest_one(self, path: str, *, doc_id: str, **_: object) -> FileResult:
        if "big" in doc_id:
            assert self.release.wait(30)
        self.done[doc_id] = time.monotonic()
        return FileResult(path=path, doc_id=doc_id, status="SUCCESS")

    def mark_failed(self, doc_id: str, reason: str) -> None:
        raise AssertionError(f"{doc_id} failed: {reason}")


def test_another_tenants_small_upload_passes_a_big_one_in_progress(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    kb = _SlowBigKb(tmp_path)
    stored = tmp_path / "stored.md"
    stored.write_text("x")
    _add(queue, "a-big", "A", size=50 * MB, path=str(stored))
    _add(queue, "b-small", "B", path=str(stored))
    main = Worker(kb, queue)  # type: ignore[arg-type]
    express = Worker(kb, queue, express_max_bytes=2 * MB)  # type: ignore[arg-type]
    # the express lane looks first: the big file is not its to take
    assert express.run_once() is not None and "b-small" in kb.done
    queue.enqueue(doc_id="b-small", tenant="B", kind="reparse", path=str(stored), rel_path="b")
    big = threading.Thread(target=main.run_once)
    big.start()
    deadline = time.monotonic() + 10
    while queue.latest_for(["a-big"])["a-big"].status != "PROCESSING":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    del kb.done["b-small"]
    job = express.run_once()  # while the big file is in progress
    assert job is not None and job.doc_id == "b-small" and "b-small" in kb.done
    assert "a-big" not in kb.done
    kb.release.set()
    big.join(10)
    assert "a-big" in kb.done
    assert queue.counts()["success"] == 3
