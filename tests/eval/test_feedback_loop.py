"""👎 → `rag feedback export` → `rag eval` end to end on a real temporary knowledge base: the
case fails while the rejected answer comes back and passes once the knowledge base is fixed;
`rag eval` runs while another process holds the knowledge base's writer lock (as `rag serve`
does), and through a running server's API (issue 68, item 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rag_app.cli import app

ROOT = Path(__file__).resolve().parents[2]
LEAVE = "# 休假制度\n\n## 年假\n\n员工工作满一年后享有带薪年假{days}。\n"
STOCK = "# 库存明细\n\n| SKU | 名称 | 库存 |\n|---|---|---|\n| SKU-1024 | 螺母 | 80 |\n"

runner = CliRunner()


def rag(*args: str, stdin: str | None = None) -> Any:
    return runner.invoke(app, list(args), input=stdin)


def thumbs_down(kb: Path, question: str, comment: str) -> int:
    """Ask in `rag chat` and 👎 the answer with a comment; the feedback's number."""
    chat = rag("chat", "--kb", str(kb), stdin=f"{question}\n/down {comment}\n")
    assert chat.exit_code == 0, chat.output
    listed = json.loads(rag("feedback", "list", "--kb", str(kb), "--json").stdout)
    assert listed[0]["comment"] == comment
    return int(listed[0]["feedback_id"])


def export_and_eval(kb: Path, out: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The exported case, its evaluated record and the human summary."""
    exported = rag("feedback", "export", str(out), "--kb", str(kb))
    assert exported.exit_code == 0, exported.output
    assert "rag eval" in exported.output  # the closing hint is about evaluating
    (case,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    run = rag("eval", str(out), "--kb", str(kb), "--json", "-")
    assert run.exit_code == 0, run.output
    (rec,) = json.loads(run.stdout)["records"]
    human = rag("eval", str(out), "--kb", str(kb))
    assert human.exit_code == 0, human.output
    return case, rec, human.output


def test_a_thumbs_down_fails_while_its_answer_comes_back_and_passes_once_fixed(
    kb_dir: Path, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "休假.md").write_text(LEAVE.format(days="五天"), encoding="utf-8")
    assert rag("ingest", str(docs), "--kb", str(kb_dir)).exit_code == 0
    feedback_id = thumbs_down(kb_dir, "年假有几天？", "数字不对，应为十天")
    corrected = rag(
        "feedback", "correct", str(feedback_id), "--answer", "十天", "--kb", str(kb_dir)
    )
    assert corrected.exit_code == 0, corrected.output

    case, rec, human = export_and_eval(kb_dir, tmp_path / "fix.jsonl")
    assert case["answers"] == ["十天"] and not case.get("gold_docs")
    assert "五天" in case["not_answer"][0] and case["comment"] == "数字不对，应为十天"
    assert rec["passed"] is False and rec["rejected_back"] is True
    assert rec["fail_reason"] == "rejected answer came back" and "五天" in rec["answer"]
    assert "feedback cases: 0 of 1 passed" in human
    assert "FAILED feedback-1 (rejected answer came back)" in human

    # the fix: the document says what the reviewer expected
    (docs / "休假.md").write_text(LEAVE.format(days="十天"), encoding="utf-8")
    assert rag("ingest", str(docs), "--kb", str(kb_dir)).exit_code == 0
    case, rec, human = export_and_eval(kb_dir, tmp_path / "fix.jsonl")
    assert rec["passed"] is True and rec["rejected_back"] is False, rec
    assert rec["keyword_hit"] is True and "十天" in rec["answer"]
    assert "feedback cases: 1 of 1 passed" in human and "FAILED" not in human


def test_a_thumbs_down_asking_for_a_refusal_passes_once_the_kb_refuses(
    kb_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "库存.md").write_text(STOCK, encoding="utf-8")
    (tmp_path / "休假.md").write_text(LEAVE.format(days="五天"), encoding="utf-8")
    ingested = rag("ingest", str(tmp_path / "库存.md"), str(tmp_path / "休假.md"),
                   "--kb", str(kb_dir), "--json")  # fmt: skip
    assert ingested.exit_code == 0, ingested.output
    stock_id = next(
        f["doc_id"] for f in json.loads(ingested.stdout)["files"] if f["path"].endswith("库存.md")
    )
    thumbs_down(kb_dir, "SKU-1024的库存是多少？", "该商品已下架，应该拒答")

    case, rec, _ = export_and_eval(kb_dir, tmp_path / "fix.jsonl")
    assert case["refuse"] is True and case["answerable"] is False and not case.get("gold_docs")
    assert rec["passed"] is False and rec["fail_reason"] == "rejected answer came back"
    assert "80" in rec["answer"]

    # the fix: the knowledge base no longer holds it
    assert rag("delete", stock_id, "--kb", str(kb_dir)).exit_code == 0
    _, rec, _ = export_and_eval(kb_dir, tmp_path / "fix.jsonl")
    assert rec["refused"] is True and rec["passed"] is True, rec


@pytest.fixture
def held_kb(kb_dir: Path, tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A knowledge base with a document and a 👎, then held open for writing by another process
    (as `rag serve` holds it) until the test ends; yields the directory and that process's id."""
    (tmp_path / "休假.md").write_text(LEAVE.format(days="五天"), encoding="utf-8")
    assert rag("ingest", str(tmp_path / "休假.md"), "--kb", str(kb_dir)).exit_code == 0
    thumbs_down(kb_dir, "年假有几天？", "应为十天")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False", RAG_KB_DIR=str(kb_dir))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    code = """
        import sys
        from rag_app.kb import KnowledgeBase
        from rag_app.store.writer_lock import describe_writer
        kb = KnowledgeBase.open()
        describe_writer(kb.path, "rag serve on http://127.0.0.1:8000")
        print("ready", flush=True)
        sys.stdin.read()
        """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"holder did not start: {line}{proc.communicate()[1]}")
    try:
        yield kb_dir, proc.pid
    finally:
        proc.kill()
        proc.communicate()


def test_eval_runs_read_only_while_another_process_holds_the_kb(
    held_kb: tuple[Path, int], tmp_path: Path
) -> None:
    kb_dir, pid = held_kb
    out = tmp_path / "fix.jsonl"
    assert rag("feedback", "export", str(out), "--kb", str(kb_dir)).exit_code == 0
    done = rag("eval", str(out), "--kb", str(kb_dir))
    assert done.exit_code == 0, done.output
    assert "read-only beside a running server" in done.output
    assert f"pid {pid}: rag serve on http://127.0.0.1:8000" in done.output
    assert "FAILED feedback-1 (rejected answer came back)" in done.output
    # --docs would ingest into it: refused, with what to evaluate instead (not how to upload)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "a.md").write_text(LEAVE.format(days="十天"), encoding="utf-8")
    refused = rag("eval", str(out), "--kb", str(kb_dir), "--docs", str(tmp_path / "more"))
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "leave out --docs" in refused.output and "--server URL --api-key" in refused.output
    assert "POST /api/documents" not in refused.output


def test_eval_through_a_running_servers_api(kb_dir: Path, tmp_path: Path, embed_model: Any) -> None:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key
    from tests.service.browser_helpers import LiveServer

    (tmp_path / "休假.md").write_text(LEAVE.format(days="五天"), encoding="utf-8")
    assert rag("ingest", str(tmp_path / "休假.md"), "--kb", str(kb_dir)).exit_code == 0
    thumbs_down(kb_dir, "年假有几天？", "应为十天")
    out = tmp_path / "fix.jsonl"
    assert rag("feedback", "export", str(out), "--kb", str(kb_dir)).exit_code == 0

    settings = Settings(kb_dir=kb_dir)
    kb = KnowledgeBase(settings, embed_model=embed_model)
    server = LiveServer(create_app(settings, kb=kb, workers=0)).start()
    try:
        key = create_key(kb.ledger, "default", "reader")
        args = ["eval", str(out), "--server", server.url, "--api-key", key]
        done = rag(*args, "--json", "-")
        assert done.exit_code == 0, done.output
        run = json.loads(done.stdout)
        (rec,) = run["records"]
        assert rec["fail_reason"] == "rejected answer came back" and "五天" in rec["answer"]
        assert run["settings"]["server"] == server.url and run["settings"]["tenant"] == "default"
        assert run["calibration"] is None  # the gate is the server's
        assert f"evaluating through the server at {server.url}" in done.output
        bad = rag("eval", str(out), "--server", server.url, "--api-key", "rk_wrong")
        assert bad.exit_code == 2 and "refused the key" in bad.output
    finally:
        server.stop()
        kb.close()
