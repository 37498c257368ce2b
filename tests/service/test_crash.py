"""Crash injection at each step of re-index and delete: by exception, and by killing the process.

Invariant checked after every crash: retrieval serves only chunks of the document's active
version (old before the flip, new after it), never a mix and never a half-written version;
``rag doctor`` then brings vectors and keyword rows back to exactly the active chunks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.shared_system_client import SharedSystemClient

from rag_app.faults import InjectedFault

V1 = """# 差旅管理办法

## 第三条 住宿标准

一线城市住宿标准为每晚600元，其他城市为每晚400元。

## 第四条 交通标准

出差乘坐高铁二等座，三小时以上可乘坐飞机经济舱。
"""
V2 = V1.replace("600", "800").replace("400", "450")
QUESTION = "一线城市住宿标准是多少？"
PRE_FLIP = ("ingest.after_parse", "ingest.after_vectors", "ingest.in_commit")
POST_FLIP = ("ingest.after_commit",)


def served(kb: Any) -> list[Any]:
    return kb.retrieve(QUESTION, top_k=10) + kb.retrieve("住宿 交通 高铁", top_k=10)


def assert_consistent_serving(kb: Any, expect: str | None) -> None:
    """Every served chunk is active, of one version, and that version's text."""
    hits = served(kb)
    active = kb.ledger.all_active_chunk_ids()
    assert {h.chunk_id for h in hits} <= active
    if expect is None:
        assert hits == []
        return
    versions = {h.version for h in hits}
    assert len(versions) == 1, f"mixed versions served: {versions}"
    text = " ".join(h.text for h in hits)
    assert expect in text
    other = "800" if expect == "600" else "600"
    assert other not in text


def assert_repaired(kb: Any) -> None:
    report = kb.doctor()
    active = kb.ledger.all_active_chunk_ids()
    assert kb.vectors.all_ids() == active
    assert kb.ledger.keyword_count() == len(active)
    again = kb.doctor(repair=False)
    assert again["orphan_vectors"] == again["inactive_chunk_rows"] == 0
    assert again["stale_keyword_rows"] == 0
    assert report["missing_vectors"] == 0


@pytest.mark.parametrize("point", PRE_FLIP + POST_FLIP)
def test_exception_during_reindex(kb, tmp_path: Path, monkeypatch, point: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "差旅.md"
    path.write_text(V1, encoding="utf-8")
    assert kb.ingest([path]).files[0].status == "SUCCESS"
    path.write_text(V2, encoding="utf-8")
    monkeypatch.setenv("RAG_FAULT", point)
    if point in POST_FLIP:  # after the flip the ingestion itself has succeeded
        with pytest.raises(InjectedFault):
            kb.ingest([path])
    else:
        result = kb.ingest([path]).files[0]
        assert result.status == "FAILED" and "injected fault" in (result.reason or "")
    assert_consistent_serving(kb, "600" if point in PRE_FLIP else "800")
    monkeypatch.delenv("RAG_FAULT")
    assert_repaired(kb)
    assert kb.ingest([path]).files[0].status in ("SUCCESS", "UNCHANGED")
    assert_consistent_serving(kb, "800")


def test_exception_during_delete(kb, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "差旅.md"
    path.write_text(V1, encoding="utf-8")
    doc_id = kb.ingest([path]).files[0].doc_id
    monkeypatch.setenv("RAG_FAULT", "delete.after_ledger")
    with pytest.raises(InjectedFault):
        kb.documents.delete(doc_id)
    assert kb.vectors.all_ids()  # the vectors are still there ...
    assert_consistent_serving(kb, None)  # ... but nothing is served
    monkeypatch.delenv("RAG_FAULT")
    assert_repaired(kb)
    assert kb.vectors.all_ids() == set()


def _rag(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rag_app.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=check,
    )


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False", RAG_KB_DIR=str(tmp_path / "kb"))
    return env


@pytest.mark.parametrize("point", PRE_FLIP + POST_FLIP + ("delete.after_ledger",))
def test_killed_process_at_each_step(
    tmp_path: Path, cli_env: dict[str, str], embed_model: Any, point: str
) -> None:
    from rag_app.kb import KnowledgeBase

    path = tmp_path / "docs" / "差旅.md"
    path.parent.mkdir()
    path.write_text(V1, encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as setup:
        doc_id = setup.ingest([path.parent]).files[0].doc_id
    assert doc_id
    # A local PersistentClient is cached per path inside a process and is not multi-process
    # safe (another process's writes are invisible to it): forget it before the child writes.
    SharedSystemClient.clear_system_cache()
    fault = cli_env | {"RAG_FAULT": point + ":kill"}
    if point.startswith("delete"):
        killed = _rag("delete", doc_id, env=fault, check=False)
    else:
        path.write_text(V2, encoding="utf-8")
        killed = _rag("ingest", str(path.parent), env=fault, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]

    kb = KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model)
    try:
        expect = {"delete.after_ledger": None, "ingest.after_commit": "800"}.get(point, "600")
        assert_consistent_serving(kb, expect)
        assert_repaired(kb)
        assert_consistent_serving(kb, expect)
    finally:
        kb.close()
