"""A real uvicorn server on 127.0.0.1 in a thread of the test process, for tests that need a
socket (a body sent slowly, a reverse proxy in front): what the test client can't do."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def readable(sock: socket.socket, timeout: float) -> bool:
    """Whether the server has sent something (or closed) within ``timeout`` seconds; through
    epoll/poll, since select() refuses the descriptors past 1024 a long test run reaches."""
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        return bool(selector.select(timeout))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[int]:
    """Serve ``app`` (lifespan included) until the block ends; yields its port."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    try:
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.05)
        yield port
    finally:
        server.should_exit = True
        thread.join(30)
