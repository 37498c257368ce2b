"""Security headers on every response: a content security policy and no framing or sniffing.

The UI (``rag_app/web``) loads only its own script and style sheet and inserts server text with
``textContent``, so the policy allows nothing but the service's own origin. The interactive API
docs (``/docs``, ``/redoc``) are FastAPI's pages with inline scripts from a CDN: they get the
framing and sniffing headers but no policy.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
ALWAYS = (
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
NO_POLICY_PATHS = ("/docs", "/redoc")


class SecurityHeaders:
    """Pure ASGI middleware (streams untouched) adding the headers above; a header the app set
    itself is kept."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        extra = list(ALWAYS)
        if not path.startswith(NO_POLICY_PATHS):
            extra.append((b"content-security-policy", CSP.encode()))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(n, v) for n, v in extra if n not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
