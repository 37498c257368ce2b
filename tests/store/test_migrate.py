"""`rag migrate`: a SQLite knowledge base moved to PostgreSQL serves the same answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.store.jobs import JobQueue
from rag_app.store.ledger import Ledger
from rag_app.store.migrate import MigrationError, copy_ledger

POLICY = """# 信息安全管理制度

## 第二章 账号与密码

第二条 员工密码每九十天至少修改一次，长度不少于十二位。

第三条 远程办公必须通过公司VPN接入内网。
"""
FAQ = "# 常见问题\n\n问：打印机卡纸怎么办？答：联系IT服务台，分机8001。\n"

QUESTIONS = ["员工密码多久需要修改一次？", "第3条的内容是什么？", "打印机卡纸找谁？"]


def test_sqlite_kb_migrated_to_postgres_serves_the_same_answers(
    tmp_path: Path, pg_url: str, embed_model, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from chromadb.api.shared_system_client import SharedSystemClient

    from rag_app import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text(POLICY, encoding="utf-8")
    (docs / "faq.md").write_text(FAQ, encoding="utf-8")
    kb_dir = tmp_path / "kb"
    kb = KnowledgeBase.open(kb_dir, embed_model=embed_model)
    try:
        kb.ingest([docs])
        (docs / "policy.md").write_text(POLICY.replace("VPN", "零信任网关"), encoding="utf-8")
        kb.ingest([docs])  # version 2 of the policy: only its active chunks move
        before_docs = {d.doc_id: (d.version, d.chunk_count) for d in kb.documents.list()}
        before = {q: [h.chunk_id for h in kb.retrieve(q, top_k=3)] for q in QUESTIONS}
        answers = {q: kb.ask(q).answer for q in QUESTIONS}
        queue = JobQueue(kb.ledger)
        pending = queue.enqueue(
            doc_id="queued", tenant="default", kind="ingest", path="/x.md", rel_path="x.md"
        )
    finally:
        kb.close()
    SharedSystemClient.clear_system_cache()

    monkeypatch.delenv("RAG_DATABASE_URL", raising=False)
    result = CliRunner().invoke(app, ["migrate", "--kb", str(kb_dir), "--to", pg_url, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert rows["documents"] == 2 and rows["jobs"] == 1
    assert rows["chunks"] == rows["keywords"] == sum(c for _, c in before_docs.values())
    password = make_url(pg_url).password
    assert not password or str(password) not in result.stdout  # the URL is shown redacted

    moved = KnowledgeBase.open(kb_dir, embed_model=embed_model, database_url=pg_url)
    try:
        assert moved.ledger.is_postgres
        assert {d.doc_id: (d.version, d.chunk_count) for d in moved.documents.list()} == before_docs
        # the same best chunk for each question (the keyword rankings of the two backends differ
        # in detail, not on a KB this small)
        after = {q: [h.chunk_id for h in moved.retrieve(q, top_k=3)] for q in QUESTIONS}
        assert {q: ids[0] for q, ids in after.items()} == {q: ids[0] for q, ids in before.items()}
        assert {q: moved.ask(q).answer for q in QUESTIONS} == answers
        assert "零信任网关" in moved.retrieve("远程办公怎么接入内网？", top_k=1)[0].text
        # the queue continues: the copied job is claimable, new ids follow the copied ones
        queue = JobQueue(moved.ledger)
        job = queue.claim("w")
        assert job is not None and job.job_id == pending.job_id
        newer = queue.enqueue(
            doc_id="other", tenant="default", kind="ingest", path="/y.md", rel_path="y.md"
        )
        assert newer.job_id > pending.job_id
    finally:
        moved.close()

    # a second migration into the now non-empty database is refused, nothing written
    again = CliRunner().invoke(app, ["migrate", "--kb", str(kb_dir), "--to", pg_url])
    assert again.exit_code == 1 and "empty database" in again.output


def test_copy_refuses_the_same_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    a, b = Ledger(url), Ledger(url)
    try:
        with pytest.raises(MigrationError, match="same database"):
            copy_ledger(a, b)
    finally:
        a.close()
        b.close()


def test_missing_kb_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_DATABASE_URL", raising=False)
    result = CliRunner().invoke(
        app, ["migrate", "--kb", str(tmp_path / "nothing"), "--to", "sqlite:///x.db"]
    )
    assert result.exit_code == 2 and "no ledger" in result.output
