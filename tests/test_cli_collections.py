"""``rag collections`` and ``--collection`` on ingest, docs, retrieve, ask and keys (issue 55)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import DOC, run

DUTY = """# 值班制度

## 值班补贴

每次周末值班补贴为300元。
"""


def test_a_collection_is_filled_by_ingest_and_scopes_questions(
    kb_dir: Path, tmp_path: Path
) -> None:
    kb = str(kb_dir)
    (tmp_path / "expense.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "duty.md").write_text(DUTY, encoding="utf-8")

    missing = run("ingest", str(tmp_path / "expense.md"), "--kb", kb, "-c", "财务")
    assert missing.exit_code == 2 and "no collection '财务'" in missing.output
    assert json.loads(run("docs", "--kb", kb, "--json").stdout) == []  # nothing ingested

    assert run("collections", "create", "财务", "--kb", kb).exit_code == 0
    assert run("collections", "create", "财务", "--kb", kb).exit_code == 2  # taken
    ingested = run("ingest", str(tmp_path / "expense.md"), "--kb", kb, "-c", "财务", "--json")
    assert ingested.exit_code == 0, ingested.output
    expense = json.loads(ingested.stdout)["files"][0]["doc_id"]
    assert run("ingest", str(tmp_path / "duty.md"), "--kb", kb).exit_code == 0

    listed = json.loads(run("collections", "list", "--kb", kb, "--json").stdout)
    assert [(c["name"], c["documents"]) for c in listed] == [("财务", 1)]
    docs = json.loads(run("docs", "--kb", kb, "-c", "财务", "--json").stdout)
    assert [d["doc_id"] for d in docs] == [expense]

    everywhere = json.loads(run("ask", "周末值班补贴是多少？", "--kb", kb, "--json").stdout)
    assert "300" in everywhere["answer"]
    within = json.loads(
        run("ask", "周末值班补贴是多少？", "--kb", kb, "-c", "财务", "--json").stdout
    )
    assert "300" not in within["answer"]
    assert {s["doc_id"] for s in within["sources"]} <= {expense}
    hits = json.loads(run("retrieve", "值班", "--kb", kb, "-c", "财务", "--json").stdout)
    assert {h["doc_id"] for h in hits} <= {expense}
    assert run("ask", "值班", "--kb", kb, "-c", "没有").exit_code == 2

    assert run("collections", "rename", "财务", "财务制度", "--kb", kb).exit_code == 0
    gone = json.loads(
        run("collections", "delete", "财务制度", "--delete-documents", "--kb", kb, "--json").stdout
    )
    assert gone == {"name": "财务制度", "documents_deleted": [expense], "documents_kept": []}
    docs = json.loads(run("docs", "--kb", kb, "--json").stdout)
    assert [d["rel_path"] for d in docs] == ["duty.md"]


def test_a_key_is_limited_to_existing_collections(kb_dir: Path) -> None:
    kb = str(kb_dir)
    assert run("keys", "create", "-t", "default", "-c", "没有", "--kb", kb).exit_code == 2
    assert run("collections", "create", "手册", "--kb", kb).exit_code == 0
    made = run("keys", "create", "-t", "default", "-c", "手册", "--kb", kb, "--json")
    assert made.exit_code == 0 and json.loads(made.stdout)["collections"] == ["手册"]
    keys = json.loads(run("keys", "list", "--kb", kb, "--json").stdout)
    assert [k["limited"] for k in keys] == [True]
