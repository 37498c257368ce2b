"""`rag serve` runs its ingestion workers in processes of their own (issue 16): a file that kills
its worker leaves the API answering, the worker is restarted, and on a local KB the server (the
one writer) serves its Chroma directory to the workers, so `rag ingest` is still refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from rag_app.service.auth import create_key
from rag_app.store.jobs import JobQueue
from rag_app.store.ledger import Ledger
from tests.service.conftest import POLICY
from tests.service.test_queue import _free_port, _serve, _wait_up


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is None:
        return ""
    # read in a thread: a child left running (a worker that outlived the server) holds the
    # pipe open, and a plain read() would then wait for ever instead of failing the test
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=60)
    return out[0] if out else "<server output still held open by a leftover child process>"


def _wait_status(url: str, doc_id: str, headers: dict[str, str], final: set[str]) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 180
    while True:
        body = httpx.get(f"{url}/api/documents/{doc_id}", headers=headers, timeout=30).json()
        if body["status"] in final or time.monotonic() > deadline:
            return dict(body)
        # the API answers while the workers ingest, die and restart
        assert httpx.get(url + "/api/health", timeout=30).status_code == 200
        time.sleep(0.3)


def _setup(tmp_path: Path) -> tuple[Path, Ledger, dict[str, str], int, str]:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    ledger = Ledger(f"sqlite:///{kb_dir / 'ledger.db'}")
    headers = {"Authorization": f"Bearer {create_key(ledger, 'acme', 'editor')}"}
    port = _free_port()
    return kb_dir, ledger, headers, port, f"http://127.0.0.1:{port}"


def _upload(url: str, headers: dict[str, str]) -> str:
    response = httpx.post(
        url + "/api/documents",
        files={"file": ("差旅.md", POLICY.encode(), "text/markdown")},
        headers=headers,
        timeout=60,
    )
    assert response.status_code == 202, response.text
    return str(response.json()["doc_id"])


def test_a_worker_killed_by_its_file_leaves_the_api_up_and_is_restarted(tmp_path: Path) -> None:
    kb_dir, ledger, headers, port, url = _setup(tmp_path)
    proc = _serve(
        kb_dir,
        port,
        RAG_FAULT="ingest.after_parse:kill",  # every ingestion SIGKILLs its process
        RAG_JOB_LEASE_SECONDS="2",
        RAG_JOB_MAX_ATTEMPTS="2",
    )
    try:
        _wait_up(url, proc)
        doc_id = _upload(url, headers)
        body = _wait_status(url, doc_id, headers, {"FAILED", "SUCCESS"})
        assert proc.poll() is None, "the API process died with its worker"
        assert body["status"] == "FAILED", body
        assert "gave up after 2 attempts" in body["error"], body
        (job,) = JobQueue(ledger).latest_for([doc_id]).values()
        # claimed twice: the second time by a restarted worker process, not the API process
        assert job.attempts == 2
        assert job.worker is not None and job.worker.split(":")[1] != str(proc.pid)
        answer = httpx.post(
            url + "/api/ask", json={"question": "住宿标准是多少？"}, headers=headers, timeout=60
        )
        assert answer.status_code == 200 and answer.json()["refused"]
        proc.kill()  # rag serve itself dies: its children (Chroma, workers) go with it
        proc.wait(timeout=30)
    finally:
        log = _stop(proc)
    ledger.close()
    assert "restarting" in log, log
    deadline = time.monotonic() + 30
    while _children_of(kb_dir) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _children_of(kb_dir)


def _children_of(kb_dir: Path) -> bool:
    """Whether any process (a worker, the Chroma server) still runs on this KB."""
    return subprocess.run(["pgrep", "-f", str(kb_dir)], capture_output=True).returncode == 0


def test_workers_ingest_in_their_own_process_and_the_cli_is_refused(tmp_path: Path) -> None:
    kb_dir, ledger, headers, port, url = _setup(tmp_path)
    proc = _serve(kb_dir, port, RAG_RETRIEVAL_MODE="dense")  # the worker's vectors, in the API
    try:
        _wait_up(url, proc)
        doc_id = _upload(url, headers)
        body = _wait_status(url, doc_id, headers, {"FAILED", "SUCCESS"})
        assert body["status"] == "SUCCESS", body
        (job,) = JobQueue(ledger).latest_for([doc_id]).values()
        assert job.worker is not None and job.worker.split(":")[1] != str(proc.pid)
        got = httpx.post(
            url + "/api/retrieve",
            json={"query": "一线城市住宿标准", "top_k": 3},
            headers=headers,
            timeout=60,
        )
        assert got.status_code == 200, got.text
        assert any("600" in s["text"] for s in got.json()["sources"])
        answer = httpx.post(
            url + "/api/ask",
            json={"question": "一线城市住宿标准是多少？"},
            headers=headers,
            timeout=60,
        ).json()
        assert "600" in answer["answer"]

        # the server is the KB's one writer: a CLI ingest is refused with the fix
        environ = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
        environ.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
        (tmp_path / "x.md").write_text("# x\n\n内容。\n", encoding="utf-8")
        cli = subprocess.run(
            [sys.executable, "-m", "rag_app.cli", "ingest", str(tmp_path / "x.md")]
            + ["--kb", str(kb_dir)],
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cli.returncode == 2, cli.stderr
        assert "rag serve on http://127.0.0.1" in cli.stderr
    finally:
        _stop(proc)
    ledger.close()
    # after the server stopped, its workers and Chroma server are gone: the CLI may write
    assert not _children_of(kb_dir)


def _worker_pids(kb_dir: Path) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", f"rag_app.cli worker --kb {kb_dir}"], capture_output=True, text=True
    )
    return [int(p) for p in found.stdout.split()]


def test_health_reports_a_killed_worker_restarted(tmp_path: Path) -> None:
    kb_dir, ledger, _, port, url = _setup(tmp_path)
    ledger.close()
    proc = _serve(kb_dir, port, RAG_WORKERS="2")
    try:
        _wait_up(url, proc)
        workers = httpx.get(url + "/api/health", timeout=30).json()["workers"]
        assert workers["mode"] == "processes"
        assert workers["configured"] == 2 and workers["alive"] == 2
        assert workers["restarts"] == 0 and workers["last_exit"] is None
        pids = _worker_pids(kb_dir)
        assert len(pids) == 2, pids
        os.kill(pids[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            workers = httpx.get(url + "/api/health", timeout=30).json()["workers"]
            if workers["restarts"] >= 1 and workers["alive"] == 2:
                break
            time.sleep(0.2)
        assert workers["restarts"] >= 1 and workers["alive"] == workers["configured"] == 2
        assert workers["last_exit"]["code"] == -signal.SIGKILL
        assert workers["last_exit"]["reason"] == "killed by signal 9 (SIGKILL)"
        assert workers["last_exit"]["worker"] == "worker 1"
        by_name = {w["name"]: w for w in workers["processes"]}
        assert by_name["worker 1"]["restarts"] == 1 and by_name["worker 2"]["restarts"] == 0
        assert all(w["alive"] for w in workers["processes"])
        assert str(tmp_path) not in json.dumps(workers)  # no paths, no pids
        assert len(_worker_pids(kb_dir)) == 2
    finally:
        _stop(proc)


def test_rag_serve_wakes_its_worker_process_on_upload(tmp_path: Path) -> None:
    """The worker polls once an hour here: only the API's wake-up (SIGUSR1) gets the job done."""
    kb_dir, ledger, headers, port, url = _setup(tmp_path)
    ledger.close()
    proc = _serve(kb_dir, port, RAG_WORKER_POLL_SECONDS="3600")
    try:
        _wait_up(url, proc)
        for i in range(2):  # the second one finds the worker idle in its long wait
            response = httpx.post(
                url + "/api/documents",
                files={"file": (f"第{i}号.md", f"# 通知{i}\n\n第{i}号通知的内容。".encode())},
                headers=headers,
                timeout=60,
            )
            assert response.status_code == 202, response.text
            body = _wait_status(url, response.json()["doc_id"], headers, {"FAILED", "SUCCESS"})
            assert body["status"] == "SUCCESS", body
            workers = httpx.get(url + "/api/health", timeout=30).json()["workers"]
            assert workers["alive"] == 1 and workers["restarts"] == 0  # woken, not killed
    finally:
        log = _stop(proc)
    assert "restarting" not in log, log


def test_the_chroma_childs_port_is_never_the_apis(monkeypatch: pytest.MonkeyPatch) -> None:
    """`rag serve` picks its Chroma child's port before the API binds its own; an API port the OS
    would hand out next (57235, as in a failed run) is skipped, not given to the child."""
    from rag_app.service import processes

    handed = iter([57235, 57235, 41000])

    class FakeSocket:
        def __init__(self, *args: object) -> None:
            self.port = next(handed)

        def __enter__(self) -> FakeSocket:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def bind(self, address: tuple[str, int]) -> None:
            return None

        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", self.port)

    monkeypatch.setattr(processes.socket, "socket", FakeSocket)
    assert processes.free_port(avoid=(57235,)) == 41000


def test_a_killed_server_takes_its_workers_along_and_leaves_their_job_to_the_next(
    tmp_path: Path,
) -> None:
    """kill -9 of `rag serve` in the middle of a job: its worker process dies with it at once
    (it may not go on and fail the job against the Chroma child, which stops too), the job
    stays in progress, not FAILED, and the next server runs it (issue 53, item 3)."""
    kb_dir, ledger, headers, port, url = _setup(tmp_path)
    proc = _serve(kb_dir, port, RAG_FAULT="ingest.after_parse:sleep60")  # a slow file
    try:
        _wait_up(url, proc)
        doc_id = _upload(url, headers)
        deadline = time.monotonic() + 120
        queue = JobQueue(ledger)
        while queue.latest_for([doc_id])[doc_id].status != "PROCESSING":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert _worker_pids(kb_dir)
        proc.kill()
        proc.wait(30)
        deadline = time.monotonic() + 10
        while _worker_pids(kb_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _worker_pids(kb_dir), "a worker outlived its server"
    finally:
        _stop(proc)
    job = queue.latest_for([doc_id])[doc_id]
    assert job.status == "PROCESSING" and job.error is None  # not failed by an orphan
    proc = _serve(kb_dir, port, RAG_JOB_LEASE_SECONDS="3600")
    try:
        _wait_up(url, proc)
        body = _wait_status(url, doc_id, headers, {"SUCCESS", "FAILED"})
        assert body["status"] == "SUCCESS" and body["job"]["attempts"] == 1, body
    finally:
        _stop(proc)
    ledger.close()
