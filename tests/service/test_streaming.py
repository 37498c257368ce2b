"""``stream: true`` on /api/ask and /api/chat: server-sent events, the text as it is written
(an LLM's reply token by token; an extractive answer line by line), then the answer (issue 55)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.eval.stub_llm import chat_completion
from tests.service.conftest import POLICY, Service, bearer
from tests.service.test_chat import STOCK

# the stub LLM's reply, in pieces; [9] is a marker it invents (there is no 9th source)
PIECES = ["SKU-1024", "的库存", "为80", "[1]", "[9]", "。"]


class _StreamingStub(BaseHTTPRequestHandler):
    streamed: list[bool] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).streamed.append(bool(body.get("stream")))
        if not body.get("stream"):
            data = json.dumps(chat_completion("".join(PIECES))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece in PIECES:
            chunk = {
                "id": "chatcmpl-stub",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "stub",
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def stub_llm() -> Iterator[str]:
    _StreamingStub.streamed = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StreamingStub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def events(response: Any) -> list[tuple[str, Any]]:
    """The (event, data) pairs of a text/event-stream body."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    found = []
    for block in response.text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields["event"], json.loads(fields["data"])))
    return found


def _split(found: list[tuple[str, Any]]) -> tuple[str, dict[str, Any]]:
    kinds = [kind for kind, _ in found]
    assert kinds[-2:] == ["answer", "end"] and set(kinds[:-2]) == {"delta"}, kinds
    return "".join(d["text"] for k, d in found if k == "delta"), found[-2][1]


def test_an_extractive_answer_streams_its_lines_then_the_answer(service: Service) -> None:
    doc_id = service.upload("差旅.md", POLICY).json()["doc_id"]
    assert service.wait(doc_id)["status"] == "SUCCESS"
    question = {"question": "一线城市住宿标准是多少？"}
    plain = service.client.post("/api/ask", json=question, headers=service.reader).json()
    streamed = service.client.post(
        "/api/ask", json={**question, "stream": True}, headers=service.reader
    )
    text, answer = _split(events(streamed))
    assert text == answer["answer"] == plain["answer"] and "600" in text
    assert [s["chunk_id"] for s in answer["sources"]] == [s["chunk_id"] for s in plain["sources"]]
    assert answer["sources"][0]["filename"] == "差旅.md"

    refused = service.client.post(
        "/api/ask", json={"question": "火星基地的氧气配额是多少？", "stream": True},
        headers=service.reader,
    )  # fmt: skip
    text, answer = _split(events(refused))
    assert answer["refused"] and text == answer["answer"]


def test_errors_before_answering_are_plain_http_errors(service: Service) -> None:
    unknown = service.client.post(
        "/api/chat",
        json={"question": "住宿标准？", "conversation_id": "0" * 16, "stream": True},
        headers=service.reader,
    )
    assert unknown.status_code == 404 and unknown.headers["content-type"] == "application/json"
    missing = service.client.post(
        "/api/ask", json={"question": "住宿标准？", "collection": "无", "stream": True},
        headers=service.reader,
    )  # fmt: skip
    assert missing.status_code == 404
    bad = service.client.post(
        "/api/ask", json={"question": "住宿标准？", "stream": "yes"}, headers=service.reader
    )
    assert bad.status_code == 422


def test_an_llm_answer_streams_as_written_and_the_answer_event_is_what_counts(
    tmp_path: Path, embed_model: Any, stub_llm: str
) -> None:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key

    settings = Settings(kb_dir=tmp_path / "kb", llm_base_url=stub_llm, llm_model="stub")
    kb = KnowledgeBase(settings, embed_model=embed_model)
    with TestClient(create_app(settings, kb=kb)) as client:
        editor = bearer(create_key(kb.ledger, "acme", "editor"))
        service = Service(client, client.app, settings.kb_dir, editor, editor, editor)
        doc_id = service.upload("库存.md", STOCK).json()["doc_id"]
        assert service.wait(doc_id)["status"] == "SUCCESS"
        first = events(
            client.post(
                "/api/chat",
                json={"question": "SKU-1024的库存是多少？", "stream": True},
                headers=editor,
            )
        )
        deltas = [d["text"] for k, d in first if k == "delta"]
        text, answer = _split(first)
        # the reply as the LLM wrote it, piece by piece; the answer without its invented [9]
        assert deltas == PIECES and text == "".join(PIECES)
        assert answer["mode"] == "llm" and answer["answer"] == "SKU-1024的库存为80[1]。"
        conversation = answer["conversation_id"]
        stored = client.get(f"/api/conversations/{conversation}", headers=editor).json()
        assert stored["turns"][0]["answer"]["answer"] == answer["answer"]

        plain = client.post("/api/ask", json={"question": "SKU-1024的库存是多少？"}, headers=editor)
        assert plain.json()["answer"] == answer["answer"]
    kb.close()
    assert _StreamingStub.streamed == [True, False]  # only the streamed request streams
