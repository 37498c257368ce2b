"""DOCX reader (python-docx): the body in document order, rendered as Markdown.

Headings (``Heading N`` / ``标题 N`` / ``Title`` styles or an outline level) become ``#``
headings, list paragraphs become ``- `` items, tables become GFM tables. Blocks are
separated by a blank line; consecutive list items form one block.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import Any

from docx import Document
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph

from rag_app.readers._markdown import escape_block_start, gfm_table, one_line
from rag_app.readers.base import ParsedFile, ReaderError
from rag_app.readers.text import normalize_newlines, require_zip_package

__all__ = ["read_docx"]

log = logging.getLogger(__name__)

_HEADING_STYLE_RE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})
_LIST_STYLE_RE = re.compile(
    r"^(?:list (?:bullet|number)|列表项目符号|列表编号)(?:\s*([1-9]))?$", re.IGNORECASE
)
# Runs of the paragraph itself, including tracked insertions, minus deletions and the
# contents of text boxes (which Word stores twice, as DrawingML and as a VML fallback).
_RUNS_XPATH = (
    ".//w:r[not(ancestor::w:del) and not(ancestor::w:moveFrom) and not(ancestor::w:txbxContent)]"
)
_CONTENT_TYPE_RE = re.compile(r"content type is '([^']+)'")


def read_docx(data: bytes) -> ParsedFile:
    """Read a .docx file into Markdown (``fmt="markdown"``)."""
    document = _open(data)
    renderer = _Renderer()
    try:
        for block in _iter_blocks(document.element.body, document):
            renderer.add(block)
    except RecursionError as exc:
        raise ReaderError("not a valid .docx file (content nested too deeply)") from exc
    text = renderer.markdown()
    if not text:
        raise ReaderError("empty document (no text in the .docx)")
    title = renderer.title or _core_title(document)
    return ParsedFile(
        text=text,
        doc_type="docx",
        fmt="markdown",
        title=title,
        encoding=None,
        metadata={"tables": renderer.tables, "headings": renderer.headings},
    )


def _open(data: bytes) -> Any:
    require_zip_package(data, ".docx", "a legacy .doc file; save it as .docx")
    try:
        return Document(io.BytesIO(data))
    except MemoryError:  # over the parse's memory limit: not a broken file
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile/lxml/python-docx raise many types
        raise ReaderError(f"not a valid .docx file ({_describe(exc)})") from exc


def _describe(exc: Exception) -> str:
    name = type(exc).__name__
    message = str(exc)
    if name in ("BadZipFile", "PackageNotFoundError"):
        return "not a ZIP/Office package"
    match = _CONTENT_TYPE_RE.search(message)
    if match:
        return f"not a Word document, content type is '{match.group(1)}'"
    if name == "KeyError":
        return f"missing part {message}"
    return f"{name}: {message}" if message else name


def _iter_blocks(container: Any, parent: Any) -> Iterator[Paragraph | Table]:
    """Paragraphs and tables of a body/cell element in document order.

    Content controls (``w:sdt``, e.g. a table of contents) and custom-XML wrappers are
    descended into; section properties and other markup are skipped.
    """
    for child in container.iterchildren():
        tag = child.tag
        if tag == qn("w:p"):
            yield Paragraph(child, parent)
        elif tag == qn("w:tbl"):
            yield Table(child, parent)
        elif tag == qn("w:sdt"):
            content = child.find(qn("w:sdtContent"))
            if content is not None:
                yield from _iter_blocks(content, parent)
        elif tag == qn("w:customXml"):
            yield from _iter_blocks(child, parent)


def _paragraph_text(paragraph: Paragraph) -> str:
    runs = paragraph._p.xpath(_RUNS_XPATH)
    text = "".join(run.text for run in runs)
    return normalize_newlines(text.replace("\x00", ""))


def _style(paragraph: Paragraph) -> Any:
    try:
        return paragraph.style
    except Exception as exc:  # noqa: BLE001 - a broken styles part must not sink the file
        log.debug("paragraph style unreadable: %s", exc)
        return None


def _outline_level(element: Any) -> int | None:
    """0-based ``w:outlineLvl`` of a paragraph or style element (9 = body text)."""
    ppr = element.find(qn("w:pPr"))
    if ppr is None:
        return None
    lvl = ppr.find(qn("w:outlineLvl"))
    if lvl is None:
        return None
    try:
        return int(lvl.get(qn("w:val")))
    except (TypeError, ValueError):
        return None


def _heading_level(paragraph: Paragraph, style: Any) -> int | None:
    """Markdown heading level (1..6) of a paragraph, or None for body text."""
    level = _outline_level(paragraph._p)
    depth = 0
    while level is None and style is not None and depth < 10:
        name = (getattr(style, "name", None) or "").strip()
        if name.lower() in _TITLE_STYLES:
            return 1
        match = _HEADING_STYLE_RE.match(name)
        if match:
            return min(int(match.group(1)), 6)
        level = _outline_level(style.element)
        try:
            style = style.base_style
        except Exception:  # noqa: BLE001
            style = None
        depth += 1
    if level is None or not 0 <= level <= 8:
        return None
    return min(level + 1, 6)


def _list_level(paragraph: Paragraph, style: Any) -> int | None:
    """0-based nesting level if the paragraph is a list item, else None."""
    ppr = paragraph._p.find(qn("w:pPr"))
    numpr = ppr.find(qn("w:numPr")) if ppr is not None else None
    if numpr is not None:
        num_id = numpr.find(qn("w:numId"))
        if num_id is not None and num_id.get(qn("w:val")) not in (None, "0"):
            ilvl = numpr.find(qn("w:ilvl"))
            try:
                return max(0, int(ilvl.get(qn("w:val")))) if ilvl is not None else 0
            except (TypeError, ValueError):
                return 0
    name = (getattr(style, "name", None) or "").strip() if style is not None else ""
    match = _LIST_STYLE_RE.match(name)
    if match:
        return int(match.group(1)) - 1 if match.group(1) else 0
    return None


def _is_title_style(style: Any) -> bool:
    name = (getattr(style, "name", None) or "").strip().lower() if style is not None else ""
    return name in _TITLE_STYLES


def _cell_text(cell: Any) -> str:
    parts: list[str] = []
    for block in _iter_blocks(cell._tc, cell):
        if isinstance(block, Paragraph):
            parts.append(one_line(_paragraph_text(block)))
        else:  # nested table: flatten its cells
            parts.extend(text for row in _table_rows(block) for text in row)
    return " ".join(part for part in parts if part)


def _table_rows(table: Table) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        try:
            # python-docx repeats a merged cell once per grid column it spans.
            rows.append([_cell_text(cell) for cell in row.cells])
        except RecursionError:
            raise
        except Exception as exc:  # noqa: BLE001 - malformed merges: fall back to raw cells
            log.debug("table row unreadable via python-docx (%s); using raw cells", exc)
            rows.append(
                [
                    one_line("".join(t.text or "" for t in tc.iter(qn("w:t"))))
                    for tc in row._tr.iterchildren(qn("w:tc"))
                ]
            )
    return rows


class _Renderer:
    """Accumulates Markdown blocks from paragraphs and tables."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.list_lines: list[str] = []
        self.title: str | None = None
        self.first_heading: str | None = None
        self.tables = 0
        self.headings = 0

    def add(self, block: Paragraph | Table) -> None:
        if isinstance(block, Table):
            self._add_table(block)
        else:
            self._add_paragraph(block)

    def _flush_list(self) -> None:
        if self.list_lines:
            self.blocks.append("\n".join(self.list_lines))
            self.list_lines = []

    def _add_table(self, table: Table) -> None:
        rendered = gfm_table(_table_rows(table))
        if rendered:
            self._flush_list()
            self.blocks.append(rendered)
            self.tables += 1

    def _add_paragraph(self, paragraph: Paragraph) -> None:
        raw = _paragraph_text(paragraph)
        if not raw.strip():
            return
        style = _style(paragraph)
        level = _heading_level(paragraph, style)
        if level is not None:
            text = one_line(raw)
            self._flush_list()
            self.blocks.append("#" * level + " " + text)
            self.headings += 1
            if self.title is None and _is_title_style(style):
                self.title = text
            if self.first_heading is None:
                self.first_heading = text
            return
        list_level = _list_level(paragraph, style)
        if list_level is not None:
            self.list_lines.append("  " * min(list_level, 8) + "- " + one_line(raw))
            return
        self._flush_list()
        lines = (line.strip() for line in raw.split("\n"))
        self.blocks.append("\n".join(escape_block_start(line) for line in lines if line))

    def markdown(self) -> str:
        self._flush_list()
        if self.title is None:
            self.title = self.first_heading
        return "\n\n".join(self.blocks).strip()


def _core_title(document: Any) -> str | None:
    try:
        title = document.core_properties.title
    except Exception:  # noqa: BLE001 - unreadable core properties: no title
        return None
    cleaned = one_line(title) if isinstance(title, str) else ""
    return cleaned or None
