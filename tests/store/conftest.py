"""A real Chroma server (``chroma run``) for the session, and VectorStores on both backends."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag_app.store.vectors import VectorStore

CHROMA_EXE = Path(sys.executable).with_name("chroma")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
LOCALHOST = ("127.0.0.1", "localhost")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def unique_collection() -> str:
    return f"test_{uuid.uuid4().hex[:16]}"


def _no_proxy_value() -> str:
    current = [
        p for p in os.environ.get("NO_PROXY", os.environ.get("no_proxy", "")).split(",") if p
    ]
    return ",".join(dict.fromkeys([*current, *LOCALHOST]))


def _server_env() -> dict[str, str]:
    """The test environment minus anything that could make the server talk to the outside."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "CHROMA_")) and k.lower() not in ("http_proxy", "https_proxy")
    }
    env["ANONYMIZED_TELEMETRY"] = "False"
    env["NO_PROXY"] = env["no_proxy"] = _no_proxy_value()
    env["NO_COLOR"] = "1"
    return env


def _log_text(log_path: Path) -> str:
    try:
        return _ANSI.sub("", log_path.read_text(errors="replace"))
    except OSError as exc:
        return f"<no server log: {exc}>"


def _heartbeat_ok(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    try:
        with opener.open(f"{url}/api/v2/heartbeat", timeout=2) as response:
            return response.status == 200 and b"heartbeat" in response.read()
    except (OSError, http.client.HTTPException):
        return False


def _wait_for_heartbeat(proc: subprocess.Popen[bytes], url: str) -> str:
    """Return "up" once the heartbeat answers, "exited" if the process died, else "timeout"."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return "exited"
        if _heartbeat_ok(url):
            return "up"
        time.sleep(0.2)
    return "timeout"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: only what we started
        proc.wait(timeout=STOP_TIMEOUT_S)


def _start_server(root: Path, attempt: int) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = free_port()
    log_path = root / f"server-{attempt}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                str(CHROMA_EXE),
                "run",
                "--path",
                str(root / "db"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_server_env(),
            cwd=root,
            start_new_session=True,  # own process group, so it can be killed as a whole
        )
    return proc, f"http://127.0.0.1:{port}", log_path


@pytest.fixture(autouse=True)
def _localhost_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx (chromadb's client and the connection check) honours proxy variables: bypass them."""
    value = _no_proxy_value()
    monkeypatch.setenv("NO_PROXY", value)
    monkeypatch.setenv("no_proxy", value)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a ``chroma run`` server on 127.0.0.1 (free port, temp data dir) for the session."""
    if not CHROMA_EXE.is_file():
        pytest.skip(f"no `chroma` executable next to {sys.executable} (pip install chromadb)")
    root = tmp_path_factory.mktemp("chroma_server")
    with pytest.MonkeyPatch.context() as mp:
        # the chromadb client (httpx) honours proxy variables; 127.0.0.1 must never go via one
        mp.setenv("NO_PROXY", _no_proxy_value())
        mp.setenv("no_proxy", _no_proxy_value())
        mp.setenv("ANONYMIZED_TELEMETRY", "False")
        for attempt in range(3):  # a free port can be taken between probing and binding
            proc, url, log_path = _start_server(root, attempt)
            status = _wait_for_heartbeat(proc, url)
            if status == "up":
                break
            if status == "timeout":
                _stop(proc)
                pytest.fail(
                    f"chroma server at {url} gave no heartbeat within {START_TIMEOUT_S:.0f}s; "
                    f"log:\n{_log_text(log_path)}"
                )
            log = _log_text(log_path).lower()
            if attempt < 2 and ("not available" in log or "in use" in log):
                continue
            pytest.fail(
                f"chroma server exited with code {proc.returncode}; log:\n{_log_text(log_path)}"
            )
        try:
            yield url
        finally:
            _stop(proc)


@pytest.fixture(params=["local", "server"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., VectorStore]]:
    """Factory of VectorStores on the parametrized backend; one fresh collection per test."""
    name = unique_collection()
    url = request.getfixturevalue("chroma_server") if backend == "server" else None
    made: list[VectorStore] = []

    def make(collection: str = name) -> VectorStore:
        if url:
            store = VectorStore(url=url, collection=collection)
        else:
            store = VectorStore(path=tmp_path / "chroma", collection=collection)
        made.append(store)
        return store

    yield make
    if url and made:  # keep the shared server small
        with contextlib.suppress(Exception):  # cleanup only
            made[0].client.delete_collection(name)


@pytest.fixture
def store(make_store: Callable[..., VectorStore]) -> VectorStore:
    return make_store()


# PostgreSQL: a local server for the session, a fresh database per test, and `ledger_url`
# parametrized over SQLite and PostgreSQL (tests/store/pg.py).
from tests.store.pg import ledger_url, pg_server, pg_url  # noqa: E402, F401
