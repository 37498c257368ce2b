"""HTML → PDF with Chromium's print-to-PDF (Debian's /usr/bin/chromium, driven by Playwright).

Chromium ignores CSS ``@page`` margin boxes, so the running header (the document's title and a
fixed marker, :data:`HEADER_MARK`) and the "第 N 页" footer come from the DevTools protocol's
``displayHeaderFooter`` with header and footer templates: printed on every page, as an office
suite prints them. ``make browser-deps`` installs Chromium, ``make ocr-deps`` the CJK font.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from render_html import FONT, Layout

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]  # fmt: skip
HEADER_MARK = "内部资料·仅供参考"  # in every running header; never in the documents' own text
FOOTER_RE = r"第\s*\d+\s*页"


def header_template(title: str) -> str:
    return (
        f'<div style="font-family:{FONT};font-size:8pt;width:100%;margin:0 12mm;'
        'display:flex;justify-content:space-between;color:#333;">'
        f"<span>{html.escape(title)}</span><span>{HEADER_MARK}</span></div>"
    )


def footer_template() -> str:
    return (
        f'<div style="font-family:{FONT};font-size:8pt;width:100%;text-align:center;color:#333;">'
        '第 <span class="pageNumber"></span> 页</div>'
    )


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium page (one browser for a whole batch of documents)."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit("skipped: /usr/bin/chromium missing (make browser-deps)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser.new_page()
        finally:
            browser.close()


def print_pdf(page: Any, document: str, title: str, layout: Layout, target: Path) -> None:
    """Print the HTML ``document`` to ``target`` with the running header and page footer."""
    page.set_content(document, wait_until="load")
    target.parent.mkdir(parents=True, exist_ok=True)
    page.pdf(
        path=str(target),
        format="A4",
        landscape=layout.landscape,
        display_header_footer=True,
        header_template=header_template(title),
        footer_template=footer_template(),
        margin={"top": "20mm", "bottom": "18mm", "left": "15mm", "right": "15mm"},
        print_background=False,
    )
