"""The `rag` command line, driven through Typer's runner against a real temporary KB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_app.cli import app

runner = CliRunner()

DOC = """# 报销制度

## 时限

报销申请须在出差结束后三十日内提交，逾期不予受理。
"""


@pytest.fixture
def kb_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embed_model) -> Path:
    # share the session's loaded model with the CLI's knowledge bases
    from rag_app import kb as kb_module

    original = kb_module.KnowledgeBase.open.__func__

    def open_with_model(cls, path=None, settings=None, **kw):
        kw.setdefault("embed_model", embed_model)
        return original(cls, path, settings, **kw)

    monkeypatch.setattr(kb_module.KnowledgeBase, "open", classmethod(open_with_model))
    return tmp_path / "kb"


def run(*args: str):
    result = runner.invoke(app, list(args))
    return result


def test_ingest_retrieve_docs_chunks_delete_round_trip(kb_dir, tmp_path):
    doc = tmp_path / "expense.md"
    doc.write_text(DOC, encoding="utf-8")
    result = run("ingest", str(doc), "--kb", str(kb_dir), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["files"][0]["status"] == "SUCCESS"
    doc_id = report["files"][0]["doc_id"]

    result = run("retrieve", "报销要在多少天内提交？", "--kb", str(kb_dir), "--json", "-k", "2")
    hits = json.loads(result.stdout)
    assert hits[0]["doc_id"] == doc_id and "三十日" in hits[0]["text"]

    docs = json.loads(run("docs", "--kb", str(kb_dir), "--json").stdout)
    assert [(d["doc_id"], d["status"]) for d in docs] == [(doc_id, "SUCCESS")]

    chunks = json.loads(run("chunks", doc_id[:8], "--kb", str(kb_dir), "--json").stdout)
    assert chunks and chunks[0]["doc_id"] == doc_id

    human = run("retrieve", "报销时限", "--kb", str(kb_dir))
    assert "expense.md" in human.stdout and "score" in human.stdout

    deleted = json.loads(run("delete", doc_id, "--kb", str(kb_dir), "--json").stdout)
    assert deleted == {"doc_id": doc_id, "deleted": True}
    assert json.loads(run("docs", "--kb", str(kb_dir), "--json").stdout) == []


def test_ingest_exits_1_when_a_file_fails_and_prints_the_reason(kb_dir, tmp_path):
    good = tmp_path / "good.md"
    good.write_text(DOC, encoding="utf-8")
    result = run("ingest", str(good), str(tmp_path / "missing.txt"), "--kb", str(kb_dir))
    assert result.exit_code == 1
    assert "path does not exist" in result.stdout
    assert "1 ingested" in result.stdout and "1 failed" in result.stdout


def test_unknown_document_id_is_a_clear_error(kb_dir):
    result = run("chunks", "nope", "--kb", str(kb_dir))
    assert result.exit_code == 1
    assert "no document with id 'nope'" in result.output


def test_help_teaches_the_commands():
    result = run("--help")
    assert result.exit_code == 0
    for command in ("ingest", "retrieve", "docs", "chunks", "delete", "doctor"):
        assert command in result.stdout


def test_ask_prints_answer_with_numbered_sources_and_json(kb_dir, tmp_path):
    doc = tmp_path / "expense.md"
    doc.write_text(DOC, encoding="utf-8")
    assert run("ingest", str(doc), "--kb", str(kb_dir)).exit_code == 0
    human = run("ask", "报销申请须在出差结束后多少日内提交？", "--kb", str(kb_dir))
    assert human.exit_code == 0, human.output
    assert "三十日" in human.stdout and "[1] expense.md" in human.stdout
    data = json.loads(
        run("ask", "报销申请须在出差结束后多少日内提交？", "--kb", str(kb_dir), "--json").stdout
    )
    assert data["refused"] is False and data["sources"][0]["source"].endswith("expense.md")
    refused = json.loads(run("ask", "公司年会在哪里举办？", "--kb", str(kb_dir), "--json").stdout)
    assert refused["refused"] is True and refused["reason"] and refused["explanation"]
    assert all(s["source"].endswith("expense.md") for s in refused["sources"])  # closest ones
    human_refusal = run("ask", "公司年会在哪里举办？", "--kb", str(kb_dir))
    assert refused["explanation"] in human_refusal.stdout.replace("\n", "")
