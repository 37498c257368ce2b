"""One LLM time budget per answer (RAG_LLM_BUDGET, issue 65): an endpoint that accepts and never
answers, or one that streams without end, costs an answer its budget: the extractive answer is
given, and no second try is made (the fake endpoint counts its connections). The time it takes
is measured by benchmarks/performance/llm_budget.py."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.service.conftest import Service
from tests.service.test_chat import STOCK
from tests.service.test_streaming import events

BUDGET = 4.0  # seconds from the answer's start: small, and above a warm retrieval


class FakeEndpoint:
    """A socket on 127.0.0.1 that accepts connections and counts them; ``reply`` (None: never
    answer) writes to each one, in a thread of its own."""

    def __init__(self, reply: Callable[[socket.socket], None] | None = None) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.reply = reply
        self.connections: list[socket.socket] = []
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)  # kept open, unanswered
            if self.reply is not None:
                threading.Thread(target=self.reply, args=(conn,), daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self.sock.close()
        for conn in self.connections:
            conn.close()


def trickle(conn: socket.socket) -> None:
    """A streamed reply that never ends: a piece every 0.2 s, cited, so that it would count."""
    try:
        conn.recv(65536)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        while True:
            chunk = {
                "id": "x", "object": "chat.completion.chunk", "created": 0, "model": "stub",
                "choices": [{"index": 0, "delta": {"content": "库存[1]"}, "finish_reason": None}],
            }  # fmt: skip
            data = f"data: {json.dumps(chunk)}\n\n".encode()
            conn.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            time.sleep(0.2)
    except OSError:
        return


@pytest.fixture
def dead() -> Iterator[FakeEndpoint]:
    endpoint = FakeEndpoint()
    yield endpoint
    endpoint.close()


@pytest.fixture
def endless() -> Iterator[FakeEndpoint]:
    endpoint = FakeEndpoint(trickle)
    yield endpoint
    endpoint.close()


def _service(make_service: Callable[..., Service], endpoint: FakeEndpoint) -> Service:
    service = make_service(llm_base_url=endpoint.url, llm_model="stub", llm_budget=BUDGET)
    doc_id = service.upload("库存.md", STOCK).json()["doc_id"]
    assert service.wait(doc_id)["status"] == "SUCCESS"
    warm = service.client.post(  # loads the models; a refusal is not sent to the LLM
        "/api/ask", json={"question": "火星基地的氧气配额是多少？"}, headers=service.reader
    ).json()
    assert warm["refused"] and not endpoint.connections
    return service


def _settled(endpoint: FakeEndpoint) -> int:
    """The connections made, once an abandoned call would have tried again (the client's own
    timeout is the budget)."""
    time.sleep(BUDGET + 1.0)
    return len(endpoint.connections)


def test_a_dead_endpoint_costs_an_answer_its_budget_once(
    make_service: Callable[..., Service], dead: FakeEndpoint
) -> None:
    service = _service(make_service, dead)
    question = {"question": "SKU-1024的库存是多少？"}
    plain = service.client.post("/api/ask", json=question, headers=service.reader)
    body = plain.json()
    assert plain.status_code == 200 and body["mode"] == "extractive" and "80" in body["answer"]
    assert "budget" in body["llm_error"]
    assert _settled(dead) == 1  # no second try

    streamed = service.client.post(
        "/api/ask", json={**question, "stream": True}, headers=service.reader
    )
    found = events(streamed)
    answer = dict(found)["answer"]
    assert answer["mode"] == "extractive" and "80" in answer["answer"]
    assert _settled(dead) == 2  # one more: this answer's only try


def test_an_endless_stream_is_cut_at_the_budget(
    make_service: Callable[..., Service], endless: FakeEndpoint
) -> None:
    service = _service(make_service, endless)
    streamed = service.client.post(
        "/api/ask",
        json={"question": "SKU-1024的库存是多少？", "stream": True},
        headers=service.reader,
    )
    found = events(streamed)
    deltas = [d["text"] for kind, d in found if kind == "delta"]
    answer = dict(found)["answer"]
    # the reply streamed while the budget held; then the extractive answer is what counts
    assert "库存[1]" in deltas and answer["mode"] == "extractive" and "80" in answer["answer"]
    assert "budget" in answer["llm_error"]
    assert _settled(endless) == 1


def test_a_chat_turn_shares_one_budget_between_rewrite_and_answer(
    make_service: Callable[..., Service], dead: FakeEndpoint
) -> None:
    service = _service(make_service, dead)
    first = service.client.post(
        "/api/chat", json={"question": "SKU-1023的库存是多少？"}, headers=service.reader
    ).json()
    assert first["mode"] == "extractive" and "120" in first["answer"]
    assert _settled(dead) == 1
    second = service.client.post(
        "/api/chat",
        json={"question": "那SKU-1024呢？", "conversation_id": first["conversation_id"]},
        headers=service.reader,
    )
    turn = second.json()
    # the rewrite timed out: the rules resolved the follow-up, and the answer made no call
    assert turn["resolved_question"] == "SKU-1024的库存是多少？" and "80" in turn["answer"]
    assert turn["mode"] == "extractive" and "budget" in turn["llm_error"]
    assert _settled(dead) == 2
