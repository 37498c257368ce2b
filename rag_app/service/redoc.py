"""/redoc without the network: ReDoc from the fastapi-offline package, its one remote request
(the "API docs by Redocly" logo from cdn.redoc.ly, baked into the script) pointed at a local
icon. The patched script is read once, when the app is built."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Response
from fastapi.openapi.docs import get_redoc_html
from fastapi.responses import HTMLResponse

REDOC_URL = "/redoc"
SCRIPT_URL = "/redoc-assets/redoc.standalone.js"
_REMOTE_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def install_redoc(app: FastAPI, assets_url: str) -> None:
    """Serve ReDoc at :data:`REDOC_URL` (build the app with ``redoc_url=None``); its favicon
    and logo come from ``assets_url``, fastapi-offline's static files."""
    source = Path(fastapi_offline.__file__).with_name("static") / "redoc.standalone.js"
    script = source.read_text(encoding="utf-8").replace(_REMOTE_LOGO, f"{assets_url}/favicon.png")
    title = f"{app.title} - ReDoc"

    @app.get(REDOC_URL, include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=title,
            redoc_js_url=SCRIPT_URL,
            redoc_favicon_url=f"{assets_url}/favicon.png",
            with_google_fonts=False,
        )

    @app.get(SCRIPT_URL, include_in_schema=False)
    async def redoc_script() -> Response:
        return Response(
            script,
            media_type="application/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )
