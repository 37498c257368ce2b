"""The durable job queue: claims are exclusive, stale jobs are requeued, restarts resume."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_app.store.jobs import JobQueue, JobStatus
from rag_app.store.ledger import Ledger
from tests.service.conftest import POLICY, Service


def _enqueue(queue: JobQueue, n: int) -> None:
    for i in range(n):
        queue.enqueue(doc_id=f"d{i}", tenant="t", kind="ingest", path=f"/x/{i}", rel_path=f"{i}.md")


def _claim_all(url: str, name: str, out: Any) -> None:
    queue = JobQueue(Ledger(url))
    while (job := queue.claim(name)) is not None:
        out.put((name, job.job_id))
        queue.finish(job.job_id, JobStatus.SUCCESS, worker=name)


def test_two_processes_claim_each_job_exactly_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    queue = JobQueue(Ledger(url))
    _enqueue(queue, 60)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_claim_all, args=(url, f"w{i}", out)) for i in range(2)]
    for p in procs:
        p.start()
    claims = [out.get(timeout=60) for _ in range(60)]
    for p in procs:
        p.join(timeout=60)
    ids = [job_id for _, job_id in claims]
    assert sorted(ids) == list(range(1, 61))  # every job once, none twice
    assert queue.counts()["success"] == 60 and queue.claim("late") is None


def test_stale_jobs_are_requeued_then_given_up(tmp_path: Path) -> None:
    queue = JobQueue(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}"), max_attempts=2)
    _enqueue(queue, 1)
    job = queue.claim("dead-worker")
    assert job is not None and job.attempts == 1
    assert queue.requeue_stale(lease_seconds=60) == (0, 0)  # heartbeat is fresh
    assert queue.requeue_stale(lease_seconds=-1) == (1, 0)  # lease over: back to PENDING
    again = queue.claim("next-worker")
    assert again is not None and again.job_id == job.job_id and again.attempts == 2
    assert queue.requeue_stale(lease_seconds=-1) == (0, 1)  # out of attempts: FAILED
    final = queue.get(job.job_id)
    assert final is not None and final.status == "FAILED" and "gave up" in (final.error or "")


def test_heartbeat_keeps_the_lease(tmp_path: Path) -> None:
    queue = JobQueue(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}"))
    _enqueue(queue, 1)
    job = queue.claim("w")
    assert job is not None
    time.sleep(0.3)
    assert queue.heartbeat(job.job_id, "w")
    assert not queue.heartbeat(job.job_id, "someone-else")
    assert queue.requeue_stale(lease_seconds=0.2) == (0, 0)


def test_restart_resumes_queued_jobs(make_service: Any) -> None:
    first: Service = make_service(workers=0)  # API only: jobs wait in the queue
    ids = [
        first.upload(name, text).json()["doc_id"]
        for name, text in (("a.md", POLICY), ("b.md", POLICY.replace("600", "700")))
    ]
    time.sleep(0.5)
    assert {
        first.client.get(f"/api/documents/{i}", headers=first.editor).json()["status"] for i in ids
    } == {"PENDING"}
    assert first.client.get("/api/health").json()["queue"]["pending"] == 2
    first.client.__exit__(None, None, None)
    first.app.state.service.kb.close()

    second: Service = make_service(workers=1)  # "restarted" service on the same ledger
    for doc_id in ids:
        assert second.wait(doc_id)["status"] == "SUCCESS"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(kb_dir: Path, port: int, **env: str) -> subprocess.Popen[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    environ.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False", RAG_KB_DIR=str(kb_dir), **env)
    return subprocess.Popen(
        [sys.executable, "-m", "rag_app.cli", "serve", "--port", str(port)],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_up(url: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("server did not come up")


def test_killed_server_resumes_the_job_after_restart(tmp_path: Path) -> None:
    from rag_app.service.auth import create_key

    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    ledger = Ledger(f"sqlite:///{kb_dir / 'ledger.db'}")
    headers = {"Authorization": f"Bearer {create_key(ledger, 'acme', 'editor')}"}
    port = _free_port()
    url = f"http://127.0.0.1:{port}"

    # 1. the server (workers as threads in it) is killed (SIGKILL) in the middle of the job:
    # vectors written, no flip
    proc = _serve(
        kb_dir, port, RAG_FAULT="ingest.after_vectors:kill", RAG_WORKERS_IN_PROCESS="true"
    )
    try:
        _wait_up(url, proc)
        response = httpx.post(
            url + "/api/documents",
            files={"file": ("差旅.md", POLICY.encode(), "text/markdown")},
            headers=headers,
        )
        assert response.status_code == 202
        doc_id = response.json()["doc_id"]
        assert proc.wait(timeout=120) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    queue = JobQueue(ledger)
    (job,) = queue.latest_for([doc_id]).values()
    assert job.status == "PROCESSING"  # orphaned by the dead process

    # 2. restarted without the fault (workers in a process of their own, the default): the job
    # the killed server left in progress is requeued at start-up (not after the hour's lease),
    # its attempt not charged (the server died, not the file), and completes
    proc = _serve(kb_dir, port, RAG_JOB_LEASE_SECONDS="3600")
    try:
        _wait_up(url, proc)
        deadline = time.monotonic() + 120
        while True:
            body = httpx.get(f"{url}/api/documents/{doc_id}", headers=headers).json()
            if body["status"] == "SUCCESS" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert body["status"] == "SUCCESS" and body["job"]["attempts"] == 1, body
        answer = httpx.post(
            url + "/api/ask",
            json={"question": "一线城市住宿标准是多少？"},
            headers=headers,
            timeout=60,
        ).json()
        assert "600" in answer["answer"]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    ledger.close()


def test_finish_is_only_the_owners(tmp_path: Path) -> None:
    """A worker whose lease ran out (job requeued and claimed by another) or whose job was
    cancelled meanwhile can't overwrite the job's state (issue 16, point 7)."""
    queue = JobQueue(Ledger(f"sqlite:///{tmp_path / 'ledger.db'}"), max_attempts=3)
    _enqueue(queue, 2)
    slow = queue.claim("slow")
    assert slow is not None
    assert queue.requeue_stale(lease_seconds=-1) == (1, 0)  # its lease ran out
    fast = queue.claim("fast")
    assert fast is not None and fast.job_id == slow.job_id
    assert queue.finish(slow.job_id, JobStatus.FAILED, "late", worker="slow") is False
    job = queue.get(slow.job_id)
    assert job is not None and job.status == JobStatus.PROCESSING and job.worker == "fast"
    assert queue.finish(fast.job_id, JobStatus.SUCCESS, worker="fast") is True
    assert queue.finish(fast.job_id, JobStatus.FAILED, worker="fast") is False  # already done
    done = queue.get(fast.job_id)
    assert done is not None and done.status == JobStatus.SUCCESS

    other = queue.claim("w")
    assert other is not None
    assert queue.cancel_for_document(other.doc_id) == 1  # deleted while processing
    assert queue.finish(other.job_id, JobStatus.SUCCESS, worker="w") is False
    cancelled = queue.get(other.job_id)
    assert cancelled is not None and cancelled.status == JobStatus.CANCELLED


def test_a_crash_between_document_and_job_leaves_neither(
    service: Service, monkeypatch: Any
) -> None:
    """The document row and its job are written in one transaction (issue 16, point 7): a crash
    between them used to leave a PENDING document that no job would ever process."""
    from rag_app.faults import InjectedFault

    monkeypatch.setenv("RAG_FAULT", "enqueue.after_document")
    with pytest.raises(InjectedFault):  # the TestClient re-raises the server's exception
        service.upload("差旅.md", POLICY)
    listed = service.client.get("/api/documents", headers=service.editor).json()
    assert listed["total"] == 0 and listed["documents"] == []
    assert service.client.get("/api/health").json()["queue"] == {"pending": 0, "processing": 0}
    monkeypatch.delenv("RAG_FAULT")
    response = service.upload("差旅.md", POLICY)  # the retry goes through whole
    assert response.status_code == 202
    assert service.wait(response.json()["doc_id"])["status"] == "SUCCESS"
