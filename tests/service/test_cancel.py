"""A delete or a newer version stops a document's running ingestion between its embedding
batches (issue 65): the job ends CANCELLED, the tenant's next job starts, and nothing of the
stopped build is served. The embedding is the real one, slowed down per batch, so that the
document is still embedding when it is deleted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from tests.service.conftest import Service, bearer

BATCH = 4
SECTIONS = 60  # one chunk each (a level-2 heading is never merged): 15 batches


class SlowEmbedding(BaseEmbedding):
    """The real embedding, ``delay`` seconds per batch; records the batches of texts holding
    ``marker`` and sets ``started`` once two of them are done."""

    _inner: BaseEmbedding = PrivateAttr()
    _delay: float = PrivateAttr()
    _marker: str = PrivateAttr()
    _batches: list[int] = PrivateAttr(default_factory=list)
    _started: threading.Event = PrivateAttr(default_factory=threading.Event)

    def __init__(self, inner: BaseEmbedding, delay: float, marker: str) -> None:
        super().__init__(model_name="slow", embed_batch_size=BATCH)
        self._inner, self._delay, self._marker = inner, delay, marker

    @property
    def batches(self) -> list[int]:
        return self._batches

    @property
    def started(self) -> threading.Event:
        return self._started

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._inner.get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if any(self._marker in t for t in texts):
            time.sleep(self._delay)
            self._batches.append(len(texts))
            if len(self._batches) >= 2:
                self._started.set()
        return self._inner.get_text_embedding_batch(texts)


def big_document(tag: str) -> str:
    sections = [
        f"## 第{i}节 {tag}\n\n这是{tag}文档的第{i}节，记录编号为{tag}-{i:03d}的设备巡检结果，状态正常。"
        for i in range(1, SECTIONS + 1)
    ]
    return "# 巡检记录\n\n" + "\n\n".join(sections) + "\n"


@pytest.fixture
def slow_service(tmp_path: Path, embed_model: Any) -> Iterator[tuple[Service, SlowEmbedding]]:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key

    slow = SlowEmbedding(embed_model, delay=0.4, marker="巡检")
    settings = Settings(
        kb_dir=tmp_path / "kb", job_lease_seconds=5.0, express_lane_mb=0, workers=1,
        embed_batch_size=BATCH, worker_poll_seconds=0.1,
    )  # fmt: skip
    kb = KnowledgeBase(settings, embed_model=slow)
    with TestClient(create_app(settings, kb=kb)) as client:
        editor = bearer(create_key(kb.ledger, "acme", "editor"))
        yield Service(client, client.app, settings.kb_dir, editor, editor, editor), slow
    kb.close()


def _job(service: Service, doc_id: str) -> dict[str, Any]:
    queue = service.app.state.service.queue
    job = queue.latest_for([doc_id])[doc_id]
    return {"id": job.job_id, "status": job.status, "error": job.error,
            "started": job.started_at, "finished": job.finished_at}  # fmt: skip


def _jobs_of(service: Service, doc_id: str) -> list[Any]:
    from sqlalchemy import select

    from rag_app.store.schema import jobs

    queue = service.app.state.service.queue
    with queue.engine.connect() as conn:
        return list(
            conn.execute(
                select(jobs).where(jobs.c.doc_id == doc_id).order_by(jobs.c.job_id)
            ).mappings()
        )


def _wait_final(service: Service, doc_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = _job(service, doc_id)
        if job["status"] not in ("PENDING", "PROCESSING"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job of {doc_id} still open: {_job(service, doc_id)}")


def test_a_delete_stops_the_running_job_and_the_next_one_starts(
    slow_service: tuple[Service, SlowEmbedding],
) -> None:
    service, slow = slow_service
    big = service.upload("巡检.md", big_document("甲")).json()["doc_id"]
    small = service.upload("值班.md", "# 值班\n\n周末值班补贴为300元。\n").json()["doc_id"]
    assert slow.started.wait(60), "the big document never started embedding"
    assert _job(service, small)["status"] == "PENDING"  # waiting behind the big one
    deleted = service.client.delete(f"/api/documents/{big}", headers=service.editor)
    assert deleted.status_code == 200, deleted.text

    assert service.wait(small)["status"] == "SUCCESS"
    stopped, following = _job(service, big), _job(service, small)
    assert stopped["status"] == "CANCELLED"
    # stopped between batches: far from all 15 of them were embedded
    assert len(slow.batches) < SECTIONS // BATCH - 3, slow.batches
    # the tenant's next job started once the stopped one was finished, not after its 15 batches
    assert stopped["finished"] is not None and following["started"] >= stopped["finished"]
    assert service.client.get(f"/api/documents/{big}", headers=service.editor).status_code == 404
    answer = service.client.post(
        "/api/ask", json={"question": "甲-005的巡检结果是什么？"}, headers=service.editor
    ).json()
    assert all(s["doc_id"] != big for s in answer["sources"])


def test_a_newer_version_supersedes_the_running_build(
    slow_service: tuple[Service, SlowEmbedding],
) -> None:
    service, slow = slow_service
    first = service.upload("巡检.md", big_document("甲")).json()["doc_id"]
    assert slow.started.wait(60)
    second = service.upload("巡检.md", big_document("乙"))
    assert second.status_code == 202 and second.json()["doc_id"] == first
    body = service.wait(first)
    assert body["status"] == "SUCCESS"
    old, new = _jobs_of(service, first)
    assert old["status"] == "CANCELLED" and "newer version" in old["error"]
    assert new["status"] == "SUCCESS" and new["started_at"] >= old["finished_at"]
    # the first build stopped early: its batches and the second's whole 15, no more
    assert len(slow.batches) < 2 * (SECTIONS // BATCH) - 3, slow.batches
    chunks = service.client.get(f"/api/documents/{first}/chunks", headers=service.editor).json()
    texts = " ".join(c["text"] for c in chunks["chunks"])
    assert "乙-001" in texts and "甲-001" not in texts
