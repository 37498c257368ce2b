"""Reject before reading (issue 16, point 2): key and size are judged before the upload body is
read, and a body without a Content-Length is read only up to the limit."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_app.service.upload_body import FRAMING_SLACK, check_declared_length, read_upload
from rag_app.service.uploads import UploadRejected
from tests.service.conftest import Service, bearer

BOUNDARY = "x7boundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def _multipart(name: str, data: bytes) -> bytes:
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


def _two_files() -> bytes:
    part = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{{}}"\r\n\r\n'
        "{}\r\n"
    )
    return (part.format("a.md", "a") + part.format("b.md", "b") + f"--{BOUNDARY}--\r\n").encode()


class _Pulled:
    """A request body that records how much of it was read."""

    def __init__(self, head: bytes = b"", block: int = 64 * 1024, blocks: int = 10**6) -> None:
        self.head, self.block, self.blocks = head, block, blocks
        self.read = 0

    def sync(self) -> Iterator[bytes]:
        for chunk in self._chunks():
            self.read += len(chunk)
            yield chunk

    async def stream(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks():
            self.read += len(chunk)
            yield chunk

    def _chunks(self) -> Iterator[bytes]:
        if self.head:
            yield self.head
        for _ in range(self.blocks):
            yield b"a" * self.block


class TestReader:
    def test_an_endless_body_is_read_only_up_to_the_limit(self) -> None:
        head = _multipart("big.md", b"")[: -len(f"\r\n--{BOUNDARY}--\r\n")]
        body = _Pulled(head)
        limit = 1 << 20
        with pytest.raises(UploadRejected) as caught:
            asyncio.run(read_upload(MULTIPART, body.stream(), limit))
        assert caught.value.status_code == 413 and "RAG_UPLOAD_MAX_MB" in caught.value.detail
        assert body.read <= limit + FRAMING_SLACK + body.block

    def test_the_file_part_itself_is_capped_at_the_limit(self) -> None:
        limit = 1000

        async def one(data: bytes) -> AsyncIterator[bytes]:
            yield data

        with pytest.raises(UploadRejected, match="too large"):
            asyncio.run(read_upload(MULTIPART, one(_multipart("a.md", b"x" * 1001)), limit))
        name, data = asyncio.run(
            read_upload(MULTIPART, one(_multipart("制度.md", b"x" * 1000)), limit)
        )
        assert name == "制度.md" and data == b"x" * 1000

    def test_a_client_that_stalls_mid_body_gets_408(self) -> None:
        """A client that pauses longer than RAG_BODY_TIMEOUT does not hold its connection."""
        head = _multipart("slow.md", b"abc")[:40]

        async def stalled() -> AsyncIterator[bytes]:
            yield head
            await asyncio.sleep(30)
            yield b"never"

        with pytest.raises(UploadRejected) as caught:
            asyncio.run(read_upload(MULTIPART, stalled(), 1000, idle=0.2))
        assert caught.value.status_code == 408 and "RAG_BODY_TIMEOUT" in caught.value.detail

    def test_declared_length(self) -> None:
        check_declared_length(None, 100)
        check_declared_length(str(100 + FRAMING_SLACK), 100)
        with pytest.raises(UploadRejected, match="too large"):
            check_declared_length(str(101 + FRAMING_SLACK), 100)
        with pytest.raises(UploadRejected) as caught:
            check_declared_length("12abc", 100)
        assert caught.value.status_code == 400

    @pytest.mark.parametrize(
        "content_type,body,status",
        [
            ("application/json", b"{}", 415),
            ("multipart/form-data", b"", 415),  # no boundary
            (MULTIPART, f"--{BOUNDARY}--\r\n".encode(), 422),  # no file field
            (MULTIPART, b"--other\r\nContent-Disposition: form-data\r\n\r\nx", 400),
            (MULTIPART, _two_files(), 400),  # the second is not silently dropped
            # no closing boundary: a truncated body is not ingested
            (MULTIPART, _multipart("a.md", b"abc")[: -len(f"\r\n--{BOUNDARY}--\r\n")], 400),
        ],
    )
    def test_bodies_that_are_not_an_upload(
        self, content_type: str, body: bytes, status: int
    ) -> None:
        async def one() -> AsyncIterator[bytes]:
            yield body

        with pytest.raises(UploadRejected) as caught:
            asyncio.run(read_upload(content_type, one(), 1000))
        assert caught.value.status_code == status, caught.value.detail


class TestRoute:
    def _post(self, service: Service, body: _Pulled, headers: dict[str, str]) -> Any:
        return service.client.post(
            "/api/documents",
            content=body.sync(),
            headers={"Content-Type": MULTIPART, **headers},
        )

    def test_no_key_is_401_before_the_body_is_read(self, service: Service) -> None:
        for headers in ({}, bearer("rk_nope_nope")):
            body = _Pulled(blocks=10)
            response = self._post(service, body, headers)
            assert response.status_code == 401 and body.read == 0

    def test_reader_key_is_403_before_the_body_is_read(self, service: Service) -> None:
        body = _Pulled(blocks=10)
        assert self._post(service, body, service.reader).status_code == 403 and body.read == 0

    def test_declared_length_over_the_limit_is_413_before_the_body_is_read(
        self, make_service: Any
    ) -> None:
        service = make_service(upload_max_mb=0.25)
        body = _Pulled(blocks=10)
        response = self._post(service, body, {**service.editor, "Content-Length": str(1 << 30)})
        assert response.status_code == 413 and body.read == 0

    def test_chunked_body_over_the_limit_is_413_and_nothing_is_stored(
        self, make_service: Any
    ) -> None:
        service = make_service(upload_max_mb=0.25)
        head = _multipart("big.md", b"")[: -len(f"\r\n--{BOUNDARY}--\r\n")]
        response = self._post(service, _Pulled(head, blocks=64), service.editor)
        assert response.status_code == 413, response.text
        assert not list((service.kb_dir / "uploads").rglob("*.md"))

    def test_a_chunked_upload_within_the_limit_is_accepted(self, service: Service) -> None:
        body = _multipart("制度.md", "# 制度\n\n内容一。".encode())
        response = service.client.post(
            "/api/documents",
            content=iter([body[:50], body[50:]]),
            headers={"Content-Type": MULTIPART, **service.editor},
        )
        assert response.status_code == 202 and response.json()["filename"] == "制度.md"


@pytest.fixture
def live(tmp_path: Path, embed_model: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """The app on a real socket (uvicorn): what a client sees before it has sent the body."""
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key
    from tests.service.browser_helpers import LiveServer

    settings = Settings(kb_dir=tmp_path / "kb", upload_max_mb=0.25)
    kb = KnowledgeBase(settings, embed_model=embed_model)
    server = LiveServer(create_app(settings, kb=kb, workers=0)).start()
    try:
        yield server, bearer(create_key(kb.ledger, "acme", "editor"))
    finally:
        server.stop()
        kb.close()


def _exchange(port: int, head: str, body_blocks: int = 0) -> str:
    """Send request headers (and then up to ``body_blocks`` 64 KB chunks, stopping when the
    server hangs up); return the status line the server answers with."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode())
        try:
            for _ in range(body_blocks):
                sock.sendall(b"10000\r\n" + b"a" * 0x10000 + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: the rest was never read
        reply = b""
        try:
            while b"\r\n" not in reply:
                part = sock.recv(4096)
                if not part:
                    break
                reply += part
        except ConnectionResetError:
            pass
    return reply.split(b"\r\n", 1)[0].decode()


def test_live_server_answers_before_the_body_is_sent(live: tuple[Any, dict[str, str]]) -> None:
    server, editor = live
    declared = (
        "POST /api/documents HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: {MULTIPART}\r\nContent-Length: {1 << 30}\r\n"
    )
    # no body at all follows: an answer proves the server did not wait for it
    assert " 401 " in _exchange(server.port, declared + "\r\n")
    auth = f"Authorization: {editor['Authorization']}\r\n"
    assert " 413 " in _exchange(server.port, declared + auth + "\r\n")


def test_live_server_stops_reading_a_chunked_body_at_the_limit(
    live: tuple[Any, dict[str, str]],
) -> None:
    server, editor = live
    head = (
        "POST /api/documents HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: {MULTIPART}\r\nTransfer-Encoding: chunked\r\n"
        f"Authorization: {editor['Authorization']}\r\n\r\n"
    )
    part = _multipart("big.md", b"")[: -len(f"\r\n--{BOUNDARY}--\r\n")]
    head += f"{len(part):x}\r\n".upper() + part.decode() + "\r\n"
    # 64 MB offered against a 0.25 MB limit
    assert " 413 " in _exchange(server.port, head, body_blocks=1024)


class TestJsonRoutes:
    """/api/ask and /api/retrieve check the key, then the size, before reading the body."""

    @pytest.mark.parametrize("path", ["/api/ask", "/api/retrieve"])
    def test_no_key_is_401_before_the_body_is_read(self, service: Service, path: str) -> None:
        for headers in ({}, bearer("rk_nope_nope")):
            body = _Pulled(head=b'{"question": "', blocks=10)
            response = service.client.post(
                path, content=body.sync(), headers={"Content-Type": "application/json", **headers}
            )
            assert response.status_code == 401 and body.read == 0

    def test_a_body_over_the_cap_is_413_read_no_further(self) -> None:
        from fastapi import HTTPException
        from starlette.requests import Request

        from rag_app.service.json_body import read_json
        from rag_app.service.schemas import AskIn

        body = _Pulled(head=b'{"question": "', blocks=10**4)  # 640 MB if read
        chunks = body.sync()

        async def receive() -> dict[str, Any]:
            chunk = next(chunks, b"")
            return {"type": "http.request", "body": chunk, "more_body": bool(chunk)}

        def request(headers: list[tuple[bytes, bytes]]) -> Request:
            scope = {"type": "http", "method": "POST", "path": "/api/ask", "headers": headers}
            return Request(scope, receive)

        json_type = [(b"content-type", b"application/json")]
        with pytest.raises(HTTPException) as caught:
            asyncio.run(read_json(request(json_type), AskIn, 256 * 1024))
        assert caught.value.status_code == 413 and "RAG_JSON_MAX_KB" in caught.value.detail
        assert body.read <= 256 * 1024 + body.block
        declared = [*json_type, (b"content-length", str(10**9).encode())]
        before = body.read
        with pytest.raises(HTTPException) as caught:
            asyncio.run(read_json(request(declared), AskIn, 256 * 1024))
        assert caught.value.status_code == 413 and body.read == before  # not a byte read

    def test_top_k_must_be_an_integer_and_json_is_required(self, service: Service) -> None:
        ask = {"question": "住宿标准"}
        for bad in (True, "5", 5.5):
            response = service.client.post(
                "/api/ask", json={**ask, "top_k": bad}, headers=service.reader
            )
            assert response.status_code == 422 and "top_k" in response.text, (bad, response.text)
        form = service.client.post("/api/ask", data=ask, headers=service.reader)
        assert form.status_code == 415
        openapi = service.client.get("/openapi.json").json()
        schema = openapi["paths"]["/api/ask"]["post"]["requestBody"]["content"]
        assert "question" in schema["application/json"]["schema"]["properties"]
