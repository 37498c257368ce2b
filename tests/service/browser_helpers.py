"""Helpers for the browser tests: a live uvicorn server in a thread (the real app on a temporary
KB with an editor and a reader key), headless Chromium, page watch, screenshots, uploads.

Chromium is Debian's (/usr/bin/chromium, `make browser-deps`); Playwright only drives it (never
`playwright install`: the machine is offline). Nothing here imports Playwright at import time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")


def skip_without_browser() -> None:
    """Skip the calling test module when Debian's Chromium or the playwright package is missing."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is missing: run `make browser-deps` (apt-get install chromium)",
            allow_module_level=True,
        )
    if importlib.util.find_spec("playwright") is None:
        pytest.skip(
            "the playwright package is missing (pip install -e '.[dev]')", allow_module_level=True
        )


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """uvicorn serving ``app`` on 127.0.0.1:<free port> in a background thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="uvicorn-test", daemon=True)

    def start(self, timeout: float = 60.0) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn thread exited before /api/health answered")
            try:
                with urllib.request.urlopen(f"{self.url}/api/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError as exc:  # connection refused while starting up
                last = exc
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not answer /api/health within {timeout}s: {last}")

    def stop(self, timeout: float = 30.0) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout)
        assert not self.thread.is_alive(), "uvicorn thread did not stop"


# "Failed to load resource: the server responded with a status of 409 (Conflict)"
_RESOURCE_STATUS = re.compile(
    r"Failed to load resource: the server responded with a status of (\d+)"
)


@dataclass
class PageWatch:
    """Collects uncaught page errors and console errors of one page."""

    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def attach(self, page: Any, accept_dialogs: bool = True) -> PageWatch:
        page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))
        page.on(
            "console",
            lambda msg: self.console_errors.append(msg.text) if msg.type == "error" else None,
        )

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            if accept_dialogs:
                dialog.accept()
            else:
                dialog.dismiss()

        page.on("dialog", on_dialog)
        return self

    def assert_clean(self, expected_statuses: tuple[int, ...] = ()) -> None:
        """No page error ever; console errors only for HTTP statuses the test provoked."""
        assert not self.page_errors, f"JavaScript errors on the page: {self.page_errors}"
        unexpected = []
        for text in self.console_errors:
            match = _RESOURCE_STATUS.search(text)
            if match and int(match.group(1)) in expected_statuses:
                continue
            unexpected.append(text)
        assert not unexpected, f"console errors: {unexpected}"


def launch_chromium(playwright: Any) -> Any:
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
    )


INGEST_TIMEOUT_MS = 120_000
UI_TIMEOUT_MS = 20_000


@dataclass
class Live:
    url: str
    editor_key: str
    reader_key: str
    docs_dir: Path
    kb: Any  # the app's KnowledgeBase (a key limited to some collections is made with its ledger)

    @property
    def editor(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.editor_key}"}


@contextmanager
def live_app(root: Path, embed_model: Any) -> Iterator[Live]:
    """The real app (temporary KB under ``root``, in-app ingestion workers) on
    127.0.0.1:<free port>, with an editor and a reader key of tenant ``acme``."""
    import pytest

    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key

    # module scope runs before the autouse RAG_* cleaner: keep the developer's shell out here too
    with pytest.MonkeyPatch.context() as env:
        for name in [n for n in os.environ if n.startswith("RAG_")]:
            env.delenv(name)
        settings = Settings(kb_dir=root / "kb")
    kb = KnowledgeBase(settings, embed_model=embed_model)
    app = create_app(settings, kb=kb)
    editor_key = create_key(kb.ledger, "acme", "editor", "browser test editor")
    reader_key = create_key(kb.ledger, "acme", "reader", "browser test reader")
    docs_dir = root / "docs"
    docs_dir.mkdir()
    server = LiveServer(app).start()
    try:
        yield Live(server.url, editor_key, reader_key, docs_dir, kb)
    finally:
        server.stop()
        kb.close()


def sized_page(browser: Any, width: int, height: int) -> tuple[Any, Any]:
    """A new context (zh-CN, Asia/Shanghai) and page of that viewport."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, locale="zh-CN", timezone_id="Asia/Shanghai"
    )
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    return context, page


class Shots:
    """page.screenshot into ``directory`` as 01-<step>.png, 02-<step>.png, ...; a step given a
    ``doc`` name is also written to ``doc_dir``/<doc>.png when one is given."""

    def __init__(self, page: Any, directory: Path, doc_dir: Path | None = None) -> None:
        self.page, self.directory, self.doc_dir, self.count = page, directory, doc_dir, 0
        directory.mkdir(parents=True, exist_ok=True)

    def __call__(self, step: str, full_page: bool = False, doc: str | None = None) -> Path:
        self.count += 1
        path = self.directory / f"{self.count:02d}-{step}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        if doc and self.doc_dir is not None:
            self.doc_dir.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(self.doc_dir / f"{doc}.png"), full_page=full_page)
        return path


def save_key(page: Any, key: str) -> None:
    page.get_by_test_id("api-key-input").fill(key)
    page.get_by_test_id("api-key-save").click()


def upload(live: Live, name: str, text: str | bytes, collection: str | None = None) -> str:
    """A file uploaded over HTTP by the editor: its document id."""
    import httpx

    data = text.encode() if isinstance(text, str) else text
    response = httpx.post(
        f"{live.url}/api/documents",
        params={"collection": collection} if collection else None,
        files={"file": (name, data)},
        headers=live.editor,
        timeout=30,
    )
    assert response.status_code == 202, response.text
    return str(response.json()["doc_id"])


def delete(live: Live, doc_id: str) -> None:
    import httpx

    httpx.delete(f"{live.url}/api/documents/{doc_id}", headers=live.editor, timeout=30)


def api_get(live: Live, path: str, key: str) -> Any:
    request = urllib.request.Request(live.url + path, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def row_action(row: Any, testid: str) -> Any:
    """The ⋯ menu of a document row opened: its item ``testid`` (chunks-button, reparse-button,
    membership-button, delete-button), visible, to click or check."""
    from playwright.sync_api import expect

    row.get_by_test_id("doc-menu-button").click()
    item = row.get_by_test_id(testid)
    expect(item).to_be_visible()
    return item


def close_menu(page: Any) -> None:
    """Close an open ⋯ menu (Escape: a popover's light dismiss)."""
    page.keyboard.press("Escape")
