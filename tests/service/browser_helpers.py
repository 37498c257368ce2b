"""Helpers for the browser test: a live uvicorn server in a thread, headless Chromium, page watch.

Chromium is Debian's (/usr/bin/chromium, `make browser-deps`); Playwright only drives it (never
`playwright install`: the machine is offline).
"""

from __future__ import annotations

import re
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
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
