"""The reverse-proxy recipe (deploy/nginx.conf, issue 65) in front of a live service: an
upload, a question and a streamed answer pass through it; a header sent byte by byte is cut by
nginx; a body over its size limit never reaches the service. nginx is Debian's (``make
nginx-deps``), started on a free port with a temporary prefix, in the foreground, and stopped;
the test skips without it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.conftest import POLICY
from tests.service.live_server import free_port, readable, serving

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "deploy" / "nginx.conf"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
HEADER_TIMEOUT = 2  # client_header_timeout here (the recipe's 10 s): the test stays short

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx not installed (make nginx-deps)")


def render(recipe: str, *, listen: int, upstream: int) -> str:
    """The recipe with the test's ports and a short header timeout; each value replaced must
    be there once, so that a change to the recipe's shape fails here, not silently."""
    swaps = {
        "listen 8080;": f"listen 127.0.0.1:{listen};",
        "server 127.0.0.1:8000;": f"server 127.0.0.1:{upstream};",
        "client_header_timeout 10s;": f"client_header_timeout {HEADER_TIMEOUT}s;",
    }
    for old, new in swaps.items():
        assert recipe.count(old) == 1, old
        recipe = recipe.replace(old, new)
    return recipe


@dataclass
class Proxied:
    url: str
    port: int
    editor: dict[str, str]


@pytest.fixture
def proxied(tmp_path: Path, embed_model: Any) -> Iterator[Proxied]:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key

    settings = Settings(kb_dir=tmp_path / "kb", workers=1)
    kb = KnowledgeBase(settings, embed_model=embed_model)
    key = create_key(kb.ledger, "acme", "editor")
    prefix = tmp_path / "nginx"
    for folder in ("logs", "temp"):
        (prefix / folder).mkdir(parents=True)
    listen = free_port()
    with serving(create_app(settings, kb=kb)) as upstream:
        (prefix / "rag.conf").write_text(
            render(RECIPE.read_text(), listen=listen, upstream=upstream)
        )
        temp = prefix / "temp"
        (prefix / "nginx.conf").write_text(
            f"pid {prefix}/nginx.pid;\nerror_log {prefix}/logs/error.log;\n"
            "events { worker_connections 64; }\nhttp {\n"
            f"  access_log {prefix}/logs/access.log;\n"
            + "".join(
                f"  {kind}_temp_path {temp}/{kind};\n"
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            )
            + f"  include {prefix}/rag.conf;\n}}\n"
        )
        assert NGINX is not None
        proc = subprocess.Popen(
            [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
             "-e", str(prefix / "logs" / "error.log"), "-g", "daemon off; master_process off;"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", listen), timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        out = proc.stdout.read() if proc.stdout else b""
                        log = (prefix / "logs" / "error.log").read_text(errors="replace")
                        raise RuntimeError(f"nginx did not start: {out!r} {log}") from None
                    time.sleep(0.05)
            yield Proxied(f"http://127.0.0.1:{listen}", listen, {"Authorization": f"Bearer {key}"})
        finally:
            proc.terminate()
            proc.wait(30)
    kb.close()


def test_upload_ask_and_stream_through_nginx(proxied: Proxied) -> None:
    with httpx.Client(base_url=proxied.url, headers=proxied.editor, timeout=60) as http:
        files = {"file": ("差旅.md", POLICY.encode(), "text/markdown")}
        accepted = http.post("/api/documents", files=files)
        assert accepted.status_code == 202, accepted.text
        doc_id = accepted.json()["doc_id"]
        deadline = time.monotonic() + 120
        while (doc := http.get(f"/api/documents/{doc_id}").json())["status"] != "SUCCESS":
            assert doc["status"] != "FAILED" and time.monotonic() < deadline, doc
            time.sleep(0.2)

        question = {"question": "一线城市住宿标准是多少？"}
        answer = http.post("/api/ask", json=question)
        assert answer.status_code == 200 and "600" in answer.json()["answer"]

        with http.stream("POST", "/api/ask", json={**question, "stream": True}) as streamed:
            assert streamed.headers["content-type"].startswith("text/event-stream")
            blocks = "".join(streamed.iter_text()).split("\n\n")
        events = [dict(line.split(": ", 1) for line in b.splitlines()) for b in blocks if b]
        assert [e["event"] for e in events][-2:] == ["answer", "end"]
        final = json.loads(events[-2]["data"])
        assert final["answer"] == answer.json()["answer"]


def test_a_header_sent_byte_by_byte_is_cut_by_nginx(proxied: Proxied) -> None:
    header = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100 + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", proxied.port), timeout=30) as sock:
        sent = 0
        for byte in header:
            ready = readable(sock, 0.25)  # 4 bytes/s
            if ready:
                break
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sent += 1
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    # nginx gave up on the header (closing, or answering 408) before it was whole
    assert sent < len(header) and not answer.startswith(b"HTTP/1.1 200"), (sent, answer[:100])


def test_a_body_over_the_size_limit_is_refused_by_nginx(proxied: Proxied) -> None:
    declared = 30 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", proxied.port), timeout=30) as sock:
        sock.sendall(
            b"POST /api/documents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
            + proxied.editor["Authorization"].encode()
            + b"\r\nContent-Type: multipart/form-data; boundary=x\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode()
        )
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
