"""One writing process per local knowledge base (issue 16, point 1): a second writer is refused
with the fix in words, readers still open and read correctly, a Chroma server takes no lock."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rag_app.cli import app
from rag_app.kb import KnowledgeBase
from rag_app.store.writer_lock import LOCK_FILE, KnowledgeBaseBusy
from tests.store.conftest import unique_collection

ROOT = Path(__file__).resolve().parents[2]
POLICY = "# 差旅管理办法\n\n## 住宿标准\n\n一线城市住宿标准为每晚600元。\n"
HOLIDAY = "# 休假制度\n\n## 年假\n\n员工工作满一年后享有带薪年假五天。\n"


def _env(kb_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False", RAG_KB_DIR=str(kb_dir))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _python(kb_dir: Path, code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=_env(kb_dir),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def other_writer(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the KB open for writing (as ``rag serve`` does) until killed."""
    kb_dir = tmp_path / "kb"
    proc = _python(
        kb_dir,
        """
        import sys
        from rag_app.kb import KnowledgeBase
        kb = KnowledgeBase.open()
        print("ready", flush=True)
        sys.stdin.read()
        """,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"writer did not start: {line}{proc.communicate()[1]}")
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def _locked(kb_dir: Path) -> bool:
    """Whether some open handle holds the writer lock (a fresh descriptor can't take it)."""
    fd = os.open(kb_dir / LOCK_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_second_writing_process_is_refused_with_the_fix(
    tmp_path: Path, other_writer: subprocess.Popen[str], embed_model: Any
) -> None:
    with pytest.raises(KnowledgeBaseBusy) as caught:
        KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model)
    message = str(caught.value)
    assert f"pid {other_writer.pid}" in message
    assert "use the API of the running server" in message and "RAG_CHROMA_URL" in message
    # a reader opens and reads meanwhile
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model, read_only=True) as reader:
        assert reader.documents.list(tenant=None) == []
    # the holder dies without closing anything (kill -9): the kernel drops its lock
    other_writer.send_signal(signal.SIGKILL)
    other_writer.wait()
    with KnowledgeBase.open(tmp_path / "kb", embed_model=embed_model) as kb:
        assert kb.documents.list(tenant=None) == []


def test_cli_writers_are_refused_and_readers_run(
    tmp_path: Path, other_writer: subprocess.Popen[str]
) -> None:
    doc = tmp_path / "差旅.md"
    doc.write_text(POLICY, encoding="utf-8")
    kb_opt = ["--kb", str(tmp_path / "kb")]
    runner = CliRunner()
    for args in (["ingest", str(doc)], ["delete", "abc"], ["doctor"]):
        result = runner.invoke(app, [*args, *kb_opt])
        assert result.exit_code == 2, (args, result.output)
        assert "RAG_CHROMA_URL" in result.output and "running server" in result.output
    for args in (["docs"], ["doctor", "--dry-run"]):
        result = runner.invoke(app, [*args, *kb_opt])
        assert result.exit_code == 0, (args, result.output)


def test_serve_names_itself_in_the_lock(tmp_path: Path) -> None:
    from rag_app.store.writer_lock import describe_writer

    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir):
        describe_writer(kb_dir, "rag serve on http://127.0.0.1:8123")
        proc = _python(
            kb_dir,
            """
            from rag_app.kb import KnowledgeBase
            try:
                KnowledgeBase.open()
            except Exception as exc:
                print(exc)
            """,
        )
        out, _ = proc.communicate(timeout=120)
    assert "rag serve on http://127.0.0.1:8123" in out and str(os.getpid()) in out


def test_handles_in_one_process_share_the_lock_until_the_last_closes(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    first = KnowledgeBase.open(kb_dir)
    second = KnowledgeBase.open(kb_dir)  # same process: one writer
    assert _locked(kb_dir)
    first.close()
    first.close()  # closing twice doesn't release the other handle's share
    assert _locked(kb_dir)
    second.close()
    assert not _locked(kb_dir)
    with KnowledgeBase.open(kb_dir, read_only=True):
        assert not _locked(kb_dir)


def test_readers_in_another_process_stay_correct(tmp_path: Path, embed_model: Any) -> None:
    """The writer (this process) ingests while reader processes come and go: each reader sees
    what was committed before it opened, and the writer's own index keeps working."""
    kb_dir = tmp_path / "kb"
    files = tmp_path / "files"
    files.mkdir()
    (files / "差旅.md").write_text(POLICY, encoding="utf-8")
    read = """
        import json
        from rag_app.kb import KnowledgeBase
        with KnowledgeBase.open(read_only=True) as kb:
            found = kb.retrieve(QUESTION, top_k=3)
            print(json.dumps([s.text for s in found], ensure_ascii=False))
        """
    with KnowledgeBase.open(kb_dir, embed_model=embed_model) as kb:
        assert kb.ingest([files]).failed == 0
        out, errors = _python(
            kb_dir, "QUESTION = '住宿标准'\n" + textwrap.dedent(read)
        ).communicate(timeout=300)
        assert "600元" in out, errors
        (files / "休假.md").write_text(HOLIDAY, encoding="utf-8")
        assert kb.ingest([files]).failed == 0  # after a reader process opened the vectors
        assert any("年假" in s.text for s in kb.retrieve("带薪年假几天", top_k=3))
        assert any("600元" in s.text for s in kb.retrieve("住宿标准", top_k=3))
        out, errors = _python(
            kb_dir, "QUESTION = '带薪年假几天'\n" + textwrap.dedent(read)
        ).communicate(timeout=300)
        assert "年假" in out, errors


def test_a_chroma_server_takes_no_local_lock(
    tmp_path: Path, chroma_server: str, other_writer: subprocess.Popen[str]
) -> None:
    """Several processes write through a Chroma server: the local lock doesn't apply."""
    kb = KnowledgeBase.open(
        tmp_path / "kb", chroma_url=chroma_server, collection=unique_collection()
    )
    kb.close()
