"""A job that failed because the platform was unreachable (the vector store, the database) is
queued again, not charged to its file (issue 53, item 3)."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.exc import OperationalError

from rag_app.config import Settings
from rag_app.ingestion.files import platform_error
from rag_app.service.worker import Worker
from rag_app.store.jobs import JobQueue, PendingDocument
from rag_app.store.ledger import Ledger
from rag_app.types import FileResult


def test_platform_errors_are_told_from_the_files_own() -> None:
    assert platform_error(httpx.ConnectError("refused"))
    assert platform_error(OperationalError("SELECT 1", {}, Exception("could not connect")))
    try:
        try:
            raise ConnectionRefusedError("chroma")
        except ConnectionRefusedError as inner:
            raise RuntimeError("upsert failed") from inner
    except RuntimeError as wrapped:
        assert platform_error(wrapped)  # found through the cause
    assert not platform_error(ValueError("bad cell"))
    assert not platform_error(MemoryError())


class _FlakyKb:
    """Fails the first ``failures`` ingestions the way a platform outage would."""

    def __init__(self, kb_dir: Path, failures: int, *, as_result: bool) -> None:
        self.settings = Settings(kb_dir=kb_dir)
        self.failures, self.as_result = failures, as_result
        self.calls = 0
        self.marked: list[str] = []
        self.ingestion = self.documents = self  # the facade's parts the worker uses

    def ingest_one(self, path: str, *, doc_id: str, **_: object) -> FileResult:
        self.calls += 1
        if self.calls <= self.failures:
            if not self.as_result:
                raise httpx.ConnectError("connection refused")
            return FileResult(
                path=path, doc_id=doc_id, status="FAILED", reason="ConnectError", platform=True
            )
        return FileResult(path=path, doc_id=doc_id, status="SUCCESS", chunks=1)

    def mark_failed(self, doc_id: str, reason: str) -> None:
        self.marked.append(reason)

    def get(self, doc_id: str) -> None:
        return None


def _one_job(tmp_path: Path) -> tuple[JobQueue, str]:
    tmp_path.mkdir()
    queue = JobQueue(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}"), max_attempts=1)
    stored = tmp_path / "a.md"
    stored.write_text("x")
    queue.enqueue(
        doc_id="d1",
        tenant="t",
        kind="ingest",
        path=str(stored),
        rel_path="a.md",
        document=PendingDocument(doc_type="markdown", size=1),
    )
    return queue, "d1"


def test_a_job_whose_vector_store_is_down_is_queued_again_uncharged(tmp_path: Path) -> None:
    for as_result in (False, True):  # raised by the worker's call, or reported by ingestion
        queue, doc_id = _one_job(tmp_path / str(as_result))
        kb = _FlakyKb(tmp_path, failures=2, as_result=as_result)
        worker = Worker(kb, queue, poll_seconds=0.01)  # type: ignore[arg-type]
        worker.wakeup.set()  # no back-off wait in the test
        assert worker.run_once() is not None
        job = queue.latest_for([doc_id])[doc_id]
        # max_attempts=1: a charged failure would have been final
        assert job.status == "PENDING" and job.attempts == 0, job
        assert "platform was unreachable" in (job.error or "")
        document = queue.ledger.get_document(doc_id)
        assert document is not None and document.status == "PENDING"
        worker.wakeup.set()
        worker.run_once()
        worker.wakeup.set()
        worker.run_once()
        job = queue.latest_for([doc_id])[doc_id]
        assert job.status == "SUCCESS" and job.attempts == 1 and kb.calls == 3, job
        assert worker.platform_failures == 0


def test_a_job_given_back_is_not_counted_as_done(tmp_path: Path) -> None:
    queue, doc_id = _one_job(tmp_path / "q")
    kb = _FlakyKb(tmp_path, failures=1, as_result=True)
    worker = Worker(kb, queue, poll_seconds=0.01)  # type: ignore[arg-type]
    worker.wakeup.set()
    # given back once, then done: one job done, and max_jobs=1 waits for the real one
    assert worker.run(until_idle=True, max_jobs=1) == 1
    assert kb.calls == 2 and queue.latest_for([doc_id])[doc_id].status == "SUCCESS"
