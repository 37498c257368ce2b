"""HTML tree to Markdown for :mod:`rag_app.readers.html`: the renderer that walks an lxml tree and
collects Markdown blocks (``h1``..``h6`` headings, paragraphs, ``- ``/``1. `` list items with their
nesting, GFM tables with col/rowspans repeated and captions, fenced code from ``pre``; dropped tags
and hidden elements skipped), and :func:`plain_text`, the structure-free fallback over the same tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import lxml.etree

from rag_app.readers._markdown import escape_block_start, gfm_table, one_line

__all__ = ["MarkdownRenderer", "plain_text"]

_SKIP = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "title",
        "nav",
        "svg",
        "math",
        "iframe",
        "object",
        "embed",
        "canvas",
        "select",
        "datalist",
    }
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LISTS = frozenset({"ul", "ol", "menu"})
_BLOCKS = frozenset(
    {
        "html",
        "body",
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "aside",
        "blockquote",
        "figure",
        "figcaption",
        "address",
        "dl",
        "dt",
        "dd",
        "li",
        "form",
        "fieldset",
        "legend",
        "details",
        "summary",
        "center",
        "hgroup",
        "caption",
        "hr",
        "tr",
        "td",
        "th",
        "thead",
        "tbody",
        "tfoot",
    }
)
# A table is "layout" (rendered as normal blocks, not as a GFM table) if it nests these.
_LAYOUT_MARKERS = ("table", "h1", "h2", "h3", "h4", "h5", "h6")

_WS_RE = re.compile(r"[ \t\n\r\f\v\xa0]+")
_LANG_RE = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)")


def _tag(element: Any) -> str | None:
    tag = element.tag
    return tag.lower() if isinstance(tag, str) else None


def _hidden(element: Any) -> bool:
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    style = (element.get("style") or "").replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def _inline_pieces(element: Any, skip_lists: bool) -> Iterator[str]:
    """Text of ``element``'s subtree, skipping dropped tags (and nested lists if asked)."""
    if element.text:
        yield element.text
    for child in element:
        tag = _tag(child)
        if tag is not None and not (
            tag in _SKIP or _hidden(child) or (skip_lists and tag in _LISTS)
        ):
            if tag == "br":
                yield " "
            else:
                yield from _inline_pieces(child, skip_lists)
                if tag in _BLOCKS or tag in _HEADINGS or tag in ("table", "pre"):
                    yield " "
        if child.tail:
            yield child.tail


def _inline_text(element: Any, *, skip_lists: bool = False) -> str:
    return one_line("".join(_inline_pieces(element, skip_lists)))


def _top_level(element: Any, tags: frozenset[str]) -> Iterator[Any]:
    """Descendants with a tag in ``tags`` that are not inside another such descendant."""
    for child in element:
        tag = _tag(child)
        if tag is None or tag in _SKIP or _hidden(child):
            continue
        if tag in tags:
            yield child
        else:
            yield from _top_level(child, tags)


def _code_fence(code: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", code)), default=2)
    return "`" * (longest + 1)


def _code_language(element: Any) -> str:
    for candidate in (element, element.find("code")):
        if candidate is not None:
            match = _LANG_RE.search(candidate.get("class") or "")
            if match:
                return match.group(1)
    return ""


def _cell_spans(cell: Any) -> tuple[int, int]:
    def span(name: str, cap: int) -> int:
        try:
            return max(1, min(int(cell.get(name, "1")), cap))
        except ValueError:
            return 1

    return span("colspan", 100), span("rowspan", 1000)


def _fill_pending(row: list[str], pending: dict[int, tuple[int, str]]) -> None:
    """Append cells still covered by a rowspan from an earlier row at the current column."""
    while len(row) in pending:
        left, text = pending[len(row)]
        if left <= 1:
            del pending[len(row)]
        else:
            pending[len(row)] = (left - 1, text)
        row.append(text)


def _table_rows(table: Any) -> list[list[str]]:
    """Rows of a table (thead/tbody/tfoot/tr in order) with col/rowspans repeated."""
    trs: list[Any] = []
    for child in table:
        tag = _tag(child)
        if tag == "tr":
            trs.append(child)
        elif tag in ("thead", "tbody", "tfoot"):
            trs.extend(tr for tr in child if _tag(tr) == "tr")
    rows: list[list[str]] = []
    pending: dict[int, tuple[int, str]] = {}  # column -> (rows still covered, text)

    for tr in trs:
        row: list[str] = []
        for cell in tr:
            if _tag(cell) not in ("td", "th") or _hidden(cell):
                continue
            _fill_pending(row, pending)
            text = _inline_text(cell)
            colspan, rowspan = _cell_spans(cell)
            for _ in range(colspan):
                if rowspan > 1:
                    pending[len(row)] = (rowspan - 1, text)
                row.append(text)
        _fill_pending(row, pending)
        if row:
            rows.append(row)
    return rows


def _is_layout_table(table: Any) -> bool:
    if (table.get("role") or "").lower() == "presentation":
        return True
    return any(table.find(f".//{marker}") is not None for marker in _LAYOUT_MARKERS)


class MarkdownRenderer:
    """Walks the tree and collects Markdown blocks."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []
        self.first_h1: str | None = None

    # -- inline buffer -------------------------------------------------------
    def _text(self, text: str | None) -> None:
        if text:
            self.inline.append(_WS_RE.sub(" ", text))

    def flush(self) -> None:
        if not self.inline:
            return
        joined = "".join(self.inline)
        self.inline = []
        lines = (_WS_RE.sub(" ", line).strip() for line in joined.split("\n"))
        paragraph = "\n".join(escape_block_start(line) for line in lines if line)
        if paragraph:
            self.blocks.append(paragraph)

    def markdown(self) -> str:
        self.flush()
        return "\n\n".join(self.blocks).strip()

    # -- tree walk -----------------------------------------------------------
    def children(self, element: Any) -> None:
        self._text(element.text)
        for child in element:
            self.walk(child)
            self._text(child.tail)

    def walk(self, element: Any) -> None:
        tag = _tag(element)
        if tag is None or tag in _SKIP or _hidden(element):
            return
        if tag in _HEADINGS:
            self.flush()
            text = _inline_text(element)
            if text:
                self.blocks.append("#" * _HEADINGS[tag] + " " + text)
                if tag == "h1" and self.first_h1 is None:
                    self.first_h1 = text
        elif tag in _LISTS:
            self.flush()
            lines = self._list_lines(element, "")
            if lines:
                self.blocks.append("\n".join(lines))
        elif tag == "table":
            self.flush()
            if _is_layout_table(element):
                self.children(element)
                self.flush()
            else:
                self._table(element)
        elif tag == "pre":
            self.flush()
            self._pre(element)
        elif tag == "br":
            self.inline.append("\n")
        elif tag == "code":
            code = one_line(element.text_content())
            if code:
                self.inline.append(f"`` {code} ``" if "`" in code else f"`{code}`")
        elif tag in _BLOCKS:
            self.flush()
            self.children(element)
            self.flush()
        else:
            self.children(element)

    def _list_lines(self, element: Any, indent: str) -> list[str]:
        ordered = _tag(element) == "ol"
        try:
            number = int(element.get("start", "1")) if ordered else 1
        except ValueError:
            number = 1
        lines: list[str] = []
        for child in element:
            tag = _tag(child)
            if tag is None or tag in _SKIP or _hidden(child):
                continue
            if tag in _LISTS:  # invalid but common: a list directly inside a list
                lines.extend(self._list_lines(child, indent + "  "))
                continue
            marker = f"{number}." if ordered else "-"
            text = _inline_text(child, skip_lists=True)
            if text:
                lines.append(f"{indent}{marker} {text}")
                number += 1
            for sub in _top_level(child, _LISTS):
                lines.extend(self._list_lines(sub, indent + " " * (len(marker) + 1)))
        return lines

    def _table(self, table: Any) -> None:
        caption = table.find("caption")
        if caption is not None:
            text = _inline_text(caption)
            if text:
                self.blocks.append(escape_block_start(text))
        rendered = gfm_table(_table_rows(table))
        if rendered:
            self.blocks.append(rendered)

    def _pre(self, element: Any) -> None:
        code = element.text_content()
        if code.startswith("\n"):
            code = code[1:]
        code = code.rstrip()
        if not code.strip():
            return
        fence = _code_fence(code)
        self.blocks.append(f"{fence}{_code_language(element)}\n{code}\n{fence}")


def plain_text(root: Any) -> str:
    """Structure-free fallback: visible text, one paragraph per source line."""
    lxml.etree.strip_elements(root, *_SKIP, with_tail=False)
    pieces: list[str] = []
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = _tag(element)
        breaks = tag is not None and (tag in _BLOCKS or tag in _HEADINGS or tag in _LISTS)
        if event == "start":
            if breaks or tag in ("br", "table", "pre"):
                pieces.append("\n")
            if tag is not None and element.text:
                pieces.append(element.text)
        else:
            if breaks:
                pieces.append("\n")
            if element.tail:
                pieces.append(element.tail)
    lines = (one_line(line) for line in "".join(pieces).split("\n"))
    return "\n\n".join(escape_block_start(line) for line in lines if line)
