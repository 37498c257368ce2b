"""Slow clients don't hold the service (issue 65): a body that trickles in is answered 408 and
its connection closed, one client address keeps at most RAG_MAX_CONNECTIONS_PER_CLIENT requests
in progress, and a client that hangs up mid-body is one line in the log. A real uvicorn server
on 127.0.0.1 and raw sockets (the test client sends a body at once)."""

from __future__ import annotations

import itertools
import logging
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.live_server import readable, serving

GRACE = 1.5  # RAG_BODY_RATE_GRACE here: the tests stay short


@dataclass
class Live:
    port: int
    editor: str
    reader: str

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def live_server(tmp_path: Path, embed_model: Any) -> Iterator[Callable[..., Live]]:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key

    numbers = itertools.count()
    with ExitStack() as stack:

        def start(**overrides: Any) -> Live:
            settings = Settings(kb_dir=tmp_path / f"kb{next(numbers)}", **overrides)
            kb = KnowledgeBase(settings, embed_model=embed_model)
            stack.callback(kb.close)
            port = stack.enter_context(serving(create_app(settings, kb=kb, workers=0)))
            editor = create_key(kb.ledger, "acme", "editor")
            return Live(port, editor, create_key(kb.ledger, "acme", "reader"))

        yield start


def head(path: str, key: str, ctype: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: {ctype}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def trickle(sock: socket.socket, body: bytes, pause: float) -> tuple[bytes, int]:
    """Send ``body`` a byte at a time, ``pause`` seconds apart, until the server answers;
    return what it sent back (until it closed) and the bytes of the body sent."""
    sent = 0
    for byte in body:
        ready = readable(sock, pause)
        if ready:
            break
        try:
            sock.sendall(bytes([byte]))
        except OSError:  # closed under us
            break
        sent += 1
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer, sent


def multipart(name: str, data: bytes, boundary: str = "b0und4ry") -> tuple[str, bytes]:
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            f"Content-Type: text/markdown\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return f"multipart/form-data; boundary={boundary}", body


def test_a_body_at_a_few_bytes_a_second_is_cut_with_408(
    live_server: Callable[..., Live],
) -> None:
    live = live_server(body_min_rate=1024, body_rate_grace=GRACE)
    body = b'{"question": "' + "住宿标准是多少".encode() * 30 + b'"}'
    with live.connect() as sock:
        sock.sendall(head("/api/ask", live.reader, "application/json", len(body)))
        answer, sent = trickle(sock, body, pause=0.1)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"connection: close" in answer.lower() and b"RAG_BODY_MIN_RATE" in answer
    assert sent < len(body)  # cut before the body was all sent; and the server closed

    ctype, upload = multipart("慢.md", "# 慢\n\n一点一点地上传。\n".encode() * 20)
    with live.connect() as sock:
        sock.sendall(head("/api/documents", live.editor, ctype, len(upload)))
        answer, sent = trickle(sock, upload, pause=0.1)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert sent < len(upload)


def test_a_body_at_a_fair_rate_is_read(live_server: Callable[..., Live]) -> None:
    live = live_server(body_min_rate=1024, body_rate_grace=GRACE)
    ctype, upload = multipart("快.md", "# 快\n\n正常速度的上传。\n".encode() * 600)  # ~16 KB
    with live.connect() as sock:
        sock.sendall(head("/api/documents", live.editor, ctype, len(upload)))
        for start in range(0, len(upload), 4096):  # 4 KB every 0.2 s: 20 KB/s
            sock.sendall(upload[start : start + 4096])
            time.sleep(0.2)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 202"), answer[:300]


def test_one_address_keeps_at_most_the_cap_in_progress(live_server: Callable[..., Live]) -> None:
    live = live_server(max_connections_per_client=3, body_min_rate=0)
    held = [live.connect() for _ in range(3)]
    for sock in held:  # each request waits for a body that does not come
        sock.sendall(head("/api/ask", live.reader, "application/json", 100))
    auth = {"Authorization": f"Bearer {live.reader}"}
    deadline = time.monotonic() + 30
    while (refused := httpx.get(live.url("/api/me"), headers=auth)).status_code != 429:
        assert time.monotonic() < deadline, refused.text  # until all three are in progress
        time.sleep(0.05)
    assert refused.headers["retry-after"] == "1" and "at most 3" in refused.json()["detail"]
    for sock in held:
        sock.close()
    while (freed := httpx.get(live.url("/api/me"), headers=auth)).status_code == 429:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert freed.status_code == 200


def test_a_hang_up_mid_body_is_one_log_line(
    live_server: Callable[..., Live], caplog: pytest.LogCaptureFixture
) -> None:
    live = live_server(body_min_rate=0)
    caplog.set_level(logging.INFO)
    ctype, upload = multipart("断.md", "# 断\n\n上传到一半客户端断开。\n".encode() * 50)
    with live.connect() as sock:
        sock.sendall(head("/api/documents", live.editor, ctype, len(upload)))
        sock.sendall(upload[: len(upload) // 2])
        time.sleep(0.3)
    deadline = time.monotonic() + 30
    while not any("hung up" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.05)
    time.sleep(0.3)  # anything logged after it would be logged by now
    (line,) = [r for r in caplog.records if "hung up" in r.getMessage()]
    assert "POST /api/documents" in line.getMessage() and line.exc_info is None
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


def _response(sock: socket.socket) -> bytes:
    """One response (headers and a Content-Length body) read off a kept-alive socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head_part, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head_part.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )  # fmt: skip
    while len(body) < length:
        body += sock.recv(65536)
    return head_part


def test_keep_alive_stays_unless_a_body_is_left_unread(live_server: Callable[..., Live]) -> None:
    live = live_server()
    with live.connect() as sock:
        for _ in range(2):  # a GET (no body) keeps its connection for the next request
            sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = _response(sock)
            assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" not in answer
        body = b'{"question": "1"}'  # read whole, then answered: the connection stays
        sock.sendall(head("/api/retrieve", live.reader, "application/json", len(body)) + body)
        answer = _response(sock)
        assert b"connection: close" not in answer.lower(), answer
    with live.connect() as sock:  # refused before its body was read: closed after the 401
        sock.sendall(head("/api/ask", "wrong-key", "application/json", 1000) + b"{")
        answer = _response(sock)
        assert answer.startswith(b"HTTP/1.1 401") and b"connection: close" in answer.lower()
