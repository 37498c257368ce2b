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
    chunk, embed = service.chunk, service.embed
    threads: dict[str, list[str]] = {"chunk": [], "embed": []}

    def spying_chunk(*args: Any, **kwargs: Any) -> Any:
        threads["chunk"].append(threading.current_thread().name)
        return chunk(*args, **kwargs)

    def spying_embed(*args: Any, **kwargs: Any) -> Any:
        threads["embed"].append(threading.current_thread().name)
        return embed(*args, **kwargs)

    monkeypatch.setattr(service, "chunk", spying_chunk)
    monkeypatch.setattr(service, "embed", spying_embed)
    report = kb.ingest([docs])
    assert [f.status for f in report.files] == ["SUCCESS"] * 4
    # each file parsed and embedded once: none prepared ahead and prepared again inline; the
    # parse (a wait on the parse child) in a thread of its own, beside the model's
    assert len(threads["chunk"]) == len(threads["embed"]) == 4
    assert all(name.startswith("ingest-parse") for name in threads["chunk"])
    assert all(name.startswith("ingest-prep") for name in threads["embed"])


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
