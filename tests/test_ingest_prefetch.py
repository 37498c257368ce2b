"""The prefetcher of an ``ingest``: passed to each file's staging, its prepared files are used."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from rag_app import KnowledgeBase


def test_an_ingest_uses_what_its_prefetcher_prepared(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"{i}.md").write_text(f"# 第{i}号文件\n\n本文件编号为{i}。\n", encoding="utf-8")
    service = kb.ingestion
    parse = service.parse
    threads: list[str] = []

    def spying(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return parse(*args, **kwargs)

    monkeypatch.setattr(service, "parse", spying)
    report = kb.ingest([docs])
    assert [f.status for f in report.files] == ["SUCCESS"] * 4
    assert len(threads) == 4  # each file parsed once: none prepared ahead and parsed again
    assert all(name.startswith("ingest-prep") for name in threads)


def test_ingest_one_parses_inline(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.md"
    path.write_text("# 标题\n\n正文。\n", encoding="utf-8")
    parse = kb.ingestion.parse
    threads: list[str] = []

    def spying(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return parse(*args, **kwargs)

    monkeypatch.setattr(kb.ingestion, "parse", spying)
    assert kb.ingestion.ingest_one(path).status == "SUCCESS"
    assert threads == [threading.current_thread().name]
