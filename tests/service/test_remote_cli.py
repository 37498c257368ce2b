"""``rag ask`` / ``rag retrieve`` with ``--server``: the question goes to a running ``rag serve``
and the output is the local command's (issue 54: no start-up per question)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rag_app.cli import app
from tests.service.browser_helpers import LiveServer
from tests.service.conftest import POLICY

runner = CliRunner()


@pytest.fixture
def served(tmp_path: Path, embed_model: Any) -> Iterator[tuple[str, str, Any]]:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key

    settings = Settings(kb_dir=tmp_path / "kb")
    kb = KnowledgeBase(settings, embed_model=embed_model)
    doc = tmp_path / "差旅.md"
    doc.write_text(POLICY, encoding="utf-8")
    kb.ingest([doc], tenant="acme")
    key = create_key(kb.ledger, "acme", "reader")
    server = LiveServer(create_app(settings, kb=kb)).start()
    try:
        yield server.url, key, kb
    finally:
        server.stop()
        kb.close()


def test_ask_and_retrieve_through_a_server_print_what_the_local_commands_print(
    served: tuple[str, str, Any],
) -> None:
    url, key, kb = served
    question = "一线城市住宿标准是多少？"
    got = runner.invoke(app, ["ask", question, "--server", url, "--api-key", key, "--json"])
    assert got.exit_code == 0, got.output
    remote = json.loads(got.stdout)
    local = kb.ask(question, tenant="acme")
    assert remote["answer"] == local.answer and "600" in remote["answer"]
    assert [s["chunk_id"] for s in remote["sources"]] == [s.chunk_id for s in local.sources]
    assert remote["sources"][0]["filename"] == "差旅.md"

    human = runner.invoke(app, ["ask", question], env={"RAG_SERVER": url, "RAG_API_KEY": key})
    assert human.exit_code == 0 and "600" in human.stdout and "差旅.md" in human.stdout

    hits = runner.invoke(app, ["retrieve", "住宿标准", "--server", url, "--api-key", key, "--json"])
    assert json.loads(hits.stdout)[0]["filename"] == "差旅.md"


def test_a_server_error_is_a_clear_message(served: tuple[str, str, Any]) -> None:
    url, key, _ = served
    no_key = runner.invoke(app, ["ask", "住宿标准", "--server", url])
    assert no_key.exit_code == 2 and "--api-key" in no_key.output
    bad_key = runner.invoke(app, ["ask", "住宿标准", "--server", url, "--api-key", "rk_x_y"])
    assert bad_key.exit_code == 2 and "refused the key" in bad_key.output
    missing = runner.invoke(app, ["ask", "住宿标准", "-c", "无", "--server", url, "--api-key", key])
    assert missing.exit_code == 2 and "404" in missing.output
    down = runner.invoke(
        app, ["ask", "住宿标准", "--server", "http://127.0.0.1:9", "--api-key", key]
    )
    assert down.exit_code == 2 and "is `rag serve` running" in down.output
