"""/docs and /redoc load every asset from this server (no CDN): the API docs work offline."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

from tests.service.conftest import Service


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.urls.append(value)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_reference_only_local_assets_that_are_served(service: Service, page: str):
    response = service.client.get(page)
    assert response.status_code == 200
    html = response.text
    parser = _Assets()
    parser.feed(html)
    assert len(parser.urls) >= 2, parser.urls  # the script and the icon (and CSS for Swagger)
    for url in parser.urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{page} loads {url} from another host"
        assert service.client.get(url).status_code == 200, url
    # the scripts also set URLs in inline code: no CDN there either
    assert "cdn." not in html and "fonts.googleapis" not in html
    if page == "/docs":  # Swagger UI's online validator badge is off
        assert '"validatorUrl": null' in html
    assert "/openapi.json" in html
    assert service.client.get("/openapi.json").status_code == 200
    scripts = [u for u in parser.urls if u.endswith(".js")]
    for url in scripts:  # nor inside the scripts (ReDoc's logo came from cdn.redoc.ly)
        assert "cdn.redoc.ly" not in service.client.get(url).text, url
