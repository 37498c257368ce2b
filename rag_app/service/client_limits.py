"""What one client may hold of the service: pure ASGI middleware around every HTTP request.

* **Requests in progress per client address** (``RAG_MAX_CONNECTIONS_PER_CLIENT``): one more is
  answered 429 at once (``Retry-After: 1``, the connection closed). An HTTP/1.1 connection
  carries one request at a time, so this caps the connections a client keeps busy; behind a
  reverse proxy the address is the one the proxy forwards (uvicorn trusts ``X-Forwarded-For``
  from ``FORWARDED_ALLOW_IPS``, 127.0.0.1 by default).
* **A minimum body rate** (``RAG_BODY_MIN_RATE`` bytes/s after ``RAG_BODY_RATE_GRACE`` s): a
  request body must keep arriving at that average from its first read, ``grace + received /
  rate`` seconds in all; past that it is answered 408 and the connection closed (the route
  reading it sees the client gone). A body sent at 1 byte/s is cut after about the grace.
  ``RAG_BODY_TIMEOUT`` (a pause between two pieces, upload_body.py) still applies.
* **A response sent before the request's body was read whole** (a 401, 413 or 408 on a body
  still coming) closes the connection, so the rest of the body is not read into nothing.
* **A client that hangs up** while its body is read is one warning line in the log, not the
  traceback of the ``ClientDisconnect`` its route raised.

Headers themselves are not timed here (uvicorn hands a request over once its headers are
complete): a reverse proxy does that (deploy/nginx.conf, docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClientPolicy:
    """The limits (``None``/0: off)."""

    max_requests: int = 0  # requests in progress per client address
    min_rate: float = 0.0  # bytes/s a body must average, after ...
    grace: float = 10.0  # ... this many seconds from its first read


async def _answer(send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


@dataclass
class _Exchange:
    """One request's body as it is read, and its response as it is sent."""

    receive: Receive
    send: Send
    policy: ClientPolicy
    started_at: float | None = None  # the body's first read (loop time)
    received: int = 0
    body_done: bool = False
    responded: bool = False  # a response was started (by the app or by the cut)
    cut: bool = False  # answered 408 here: the app is told the client is gone
    pending: asyncio.Future[Message] | None = field(default=None, repr=False)

    def _deadline(self) -> float | None:
        if self.policy.min_rate <= 0 or self.started_at is None:
            return None
        return self.started_at + self.policy.grace + self.received / self.policy.min_rate

    async def read(self) -> Message:
        """The app's ``receive``: the body's pieces while they come fast enough."""
        if self.cut:
            return {"type": "http.disconnect"}
        if self.body_done or self.policy.min_rate <= 0:
            return self._count(await self.receive())
        loop = asyncio.get_running_loop()
        if self.started_at is None:
            self.started_at = loop.time()
        deadline = self._deadline()
        assert deadline is not None
        if self.pending is None:
            self.pending = asyncio.ensure_future(self.receive())
        done, _ = await asyncio.wait({self.pending}, timeout=max(0.0, deadline - loop.time()))
        if not done:  # nothing more came in time
            return await self._cut()
        message, self.pending = self.pending.result(), None
        message = self._count(message)
        late = self._deadline()
        if not self.body_done and late is not None and loop.time() > late:
            return await self._cut()  # a piece came, too late for what came before it
        return message

    def _count(self, message: Message) -> Message:
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if not message.get("more_body", False):
                self.body_done = True
        return message

    async def _cut(self) -> Message:
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
        self.cut = True
        if not self.responded:
            self.responded = True
            rate = self.policy.min_rate
            await _answer(
                self.send, 408,
                f"request body too slow: under {rate:g} bytes/s on average after "
                f"{self.policy.grace:g} s (RAG_BODY_MIN_RATE, RAG_BODY_RATE_GRACE)", [],
            )  # fmt: skip
        return {"type": "http.disconnect"}

    async def write(self, message: Message) -> None:
        """The app's ``send``: nothing after a cut; ``Connection: close`` on a response that
        starts before the body was read whole."""
        if self.cut:
            return
        if message["type"] == "http.response.start":
            self.responded = True
            if not self.body_done:
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await self.send(message)


def _has_body(scope: Scope) -> bool:
    """Whether the request announces a body (a GET without one keeps its connection)."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
        if name == b"transfer-encoding":
            return True
    return False


class ClientLimits:
    """The middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: ClientPolicy) -> None:
        self.app = app
        self.policy = policy
        self.in_progress: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else "unknown"
        cap = self.policy.max_requests
        if cap > 0 and self.in_progress.get(address, 0) >= cap:
            await _answer(
                send, 429,
                f"too many requests in progress from this address (at most {cap}; "
                "RAG_MAX_CONNECTIONS_PER_CLIENT)", [(b"retry-after", b"1")],
            )  # fmt: skip
            return
        self.in_progress[address] = self.in_progress.get(address, 0) + 1
        exchange = _Exchange(receive, send, self.policy, body_done=not _has_body(scope))
        try:
            await self.app(scope, exchange.read, exchange.write)
        except ClientDisconnect:
            if not exchange.cut:
                logger.warning(
                    "client %s hung up during %s %s (%d bytes of its body read)",
                    address, scope.get("method"), scope.get("path"), exchange.received,
                )  # fmt: skip
        finally:
            left = self.in_progress[address] - 1
            if left:
                self.in_progress[address] = left
            else:
                del self.in_progress[address]
            if exchange.pending is not None:
                exchange.pending.cancel()
