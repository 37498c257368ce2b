"""Security headers on every response (issue 16, point 7): CSP, no framing, no sniffing."""

from __future__ import annotations

from pathlib import Path

from tests.service.conftest import Service

WEB_DIR = Path(__file__).resolve().parents[2] / "rag_app" / "web"

# the UI's scripts: markdown.js (classic) and the ES modules app.js imports
SCRIPTS = sorted(f"/{path.name}" for path in WEB_DIR.glob("*.js"))


def _assert_protected(response: object, csp: bool = True) -> None:
    headers = response.headers  # type: ignore[attr-defined]
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    if csp:
        policy = headers["content-security-policy"]
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    else:
        assert "content-security-policy" not in headers


def test_ui_api_and_errors_carry_the_headers(service: Service) -> None:
    for path in ("/", *SCRIPTS, "/style.css", "/api/health", "/openapi.json"):
        response = service.client.get(path)
        assert response.status_code == 200, path
        _assert_protected(response)
    _assert_protected(service.client.get("/api/me"))  # 401
    _assert_protected(service.client.get("/api/me", headers=service.editor))
    _assert_protected(service.client.post("/api/ask", json={}, headers=service.editor))  # 422
    _assert_protected(service.client.get("/no-such-page"))  # 404
    _assert_protected(service.upload("a.exe", b"MZ"))  # 415 from the upload route


def test_ui_needs_nothing_the_policy_forbids(service: Service) -> None:
    """The page loads only same-origin files and has no inline script or style."""
    page = service.client.get("/").text
    assert "<script>" not in page and "<style" not in page and " style=" not in page
    assert "http://" not in page and "https://" not in page
    assert {"/app.js", "/markdown.js"} <= set(SCRIPTS)
    for path in SCRIPTS:
        response = service.client.get(path)
        # a module script under nosniff runs only when served with a JavaScript type
        media_type = response.headers["content-type"].split(";")[0].strip()
        assert media_type in ("text/javascript", "application/javascript"), (path, media_type)
        script = response.text
        assert "innerHTML" not in script.replace("never innerHTML", ""), path
        assert "eval(" not in script and "new Function" not in script, path


def test_api_docs_keep_their_cdn_scripts(service: Service) -> None:
    response = service.client.get("/docs")
    assert response.status_code == 200
    _assert_protected(response, csp=False)
