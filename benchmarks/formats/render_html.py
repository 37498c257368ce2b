"""Markdown → print-ready HTML in the layouts the format benchmark renders to PDF.

A layout fixes the page (A4 portrait or landscape), the columns (one or two), and how tables are
drawn (ruled: every cell boxed; borderless: no lines at all, columns only aligned) and whether
their header row repeats on every page (``<thead>``, which Chromium repeats) or is printed once
(the header as the first body row). Text is set in a CJK font (WenQuanYi Zen Hei, ``make
ocr-deps``), justified so Chinese lines wrap mid-sentence, and long cells wrap inside their
column. The running header and the "第 N 页" footer are not in the HTML: Chromium prints them
from the templates in :mod:`render_pdf`.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

FONT = "'WenQuanYi Zen Hei', 'Noto Sans CJK SC', sans-serif"


@dataclass(frozen=True)
class Layout:
    name: str
    landscape: bool = False
    columns: int = 1
    ruled: bool = True
    repeat_header: bool = False  # the table header on every page (thead) or once

    def describe(self) -> str:
        page = "A4 landscape" if self.landscape else "A4 portrait"
        tables = "ruled" if self.ruled else "borderless"
        head = "header row on every page" if self.repeat_header else "header row once"
        return f"{page}, {self.columns} column(s), {tables} tables ({head})"


LAYOUTS = {
    "pdf-ruled": Layout("pdf-ruled"),
    "pdf-borderless": Layout("pdf-borderless", landscape=True, ruled=False, repeat_header=True),
    "pdf-2col": Layout("pdf-2col", columns=2, repeat_header=True),
}


def css(layout: Layout) -> str:
    cell_border = "0.6pt solid #000" if layout.ruled else "none"
    columns = (
        f"body {{ column-count: {layout.columns}; column-gap: 8mm; column-fill: auto; }}"
        "table, h1 { column-span: all; }"
        if layout.columns > 1
        else ""
    )
    return f"""
@page {{ size: A4 {"landscape" if layout.landscape else "portrait"}; }}
html {{ font-family: {FONT}; font-size: 10.5pt; line-height: 1.55; color: #000; }}
body {{ margin: 0; text-align: justify; }}
h1 {{ font-size: 16pt; text-align: center; margin: 0 0 8pt; }}
h2 {{ font-size: 13pt; margin: 10pt 0 4pt; }}
h3 {{ font-size: 11.5pt; margin: 8pt 0 3pt; }}
h4, h5, h6 {{ font-size: 10.5pt; margin: 6pt 0 2pt; }}
p {{ margin: 0 0 4pt; text-indent: 2em; }}
table {{ width: 100%; border-collapse: collapse; font-size: 8.5pt; line-height: 1.3;
         table-layout: auto; margin: 4pt 0 8pt; }}
th, td {{ border: {cell_border}; padding: 2pt 3pt; vertical-align: top; text-align: left;
          overflow-wrap: break-word; }}
th, tr.head td {{ font-weight: bold; }}
tr {{ break-inside: avoid; }}
{columns}
"""


def _header_once(body: str) -> str:
    """``<thead>`` rows moved into the body, bold, so that Chromium prints them once."""

    def move(m: re.Match[str]) -> str:
        head = m.group(1).replace("<th", "<td").replace("</th>", "</td>")
        head = head.replace("<tr>", '<tr class="head">', 1)
        return f"<tbody>\n{head}"

    return re.sub(r"<thead>\s*(.*?)</thead>\s*<tbody>", move, body, flags=re.S)


def to_html(markdown: str, title: str, layout: Layout) -> str:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    body = md.render(markdown)
    if not layout.repeat_header:
        body = _header_once(body)
    return (
        '<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{css(layout)}</style></head>"
        f"<body>\n{body}</body></html>\n"
    )


def title_of(markdown: str, fallback: str) -> str:
    """The first ``# `` heading, else ``fallback`` (the file's stem)."""
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback
