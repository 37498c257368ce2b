"""DOCX reader (python-docx): the body in document order, rendered as Markdown, numbered as Word
numbers it.

* Headings (``Heading N`` / ``标题 N`` / ``Title`` styles or an outline level) become ``#``
  headings, with the number Word shows for them ("## 第二章 考勤", "## 1.2 适用范围").
* Automatic numbering (``word/numbering.xml``, see :mod:`rag_app.readers.docx_numbering`) is
  written out: a paragraph Word shows as "第一条 员工每年享有带薪年假十天。" reads so, and a
  ``List Number`` item as "1. …"; numbered paragraphs are blocks of their own. Bulleted
  paragraphs become ``- `` items (nested by level); consecutive ones form one block.
* Tables become GFM tables laid out on their grid, merged cells (``w:gridSpan``, ``w:vMerge``)
  filled and a multi-row header folded as the spreadsheet readers do
  (:func:`rag_app.readers.sheets.sheet_table`).
* Text boxes are read once, after the paragraph that anchors them.
* Headers and footers stay out of the text (the first header is the title of last resort);
  footnotes and endnotes are marked ``[^n]`` where they are referenced and listed at the end
  under ``## 脚注`` as ``[^n]: text``, so a note's text is searchable without interrupting the
  sentence that cites it.

Blocks are separated by a blank line.
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from docx import Document
from docx.oxml.ns import qn

from rag_app.readers._markdown import escape_block_start, one_line
from rag_app.readers.base import ParsedFile, ReaderError
from rag_app.readers.docx_numbering import Label, Numbering, StyleSheet
from rag_app.readers.docx_parts import (
    NoteNumbers,
    header_text,
    iter_blocks,
    notes,
    run_text,
    table_grid,
    text_boxes,
)
from rag_app.readers.sheets import sheet_table
from rag_app.readers.text import normalize_newlines, require_zip_package

__all__ = ["read_docx"]

log = logging.getLogger(__name__)

_HEADING_STYLE_RE = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})
_LIST_STYLE_RE = re.compile(
    r"^(?:list (bullet|number)|列表(项目符号|编号))(?:\s*([1-9]))?$", re.IGNORECASE
)
_CONTENT_TYPE_RE = re.compile(r"content type is '([^']+)'")
_TBL, _PPR, _PSTYLE, _OUTLINE = qn("w:tbl"), qn("w:pPr"), qn("w:pStyle"), qn("w:outlineLvl")
_W_VAL = qn("w:val")
_MAX_BOX_DEPTH = 4  # text boxes inside text boxes
_MAX_TITLE_CHARS = 60
NOTES_HEADING = "脚注"


def read_docx(data: bytes, *, doc_type: str = "docx") -> ParsedFile:
    """Read a .docx file into Markdown (``fmt="markdown"``)."""
    document = _open(data)
    styles = StyleSheet(_styles(document))
    renderer = _Renderer(styles, Numbering(_numbering(document), styles))
    try:
        renderer.add_blocks(document.element.body)
        note_lines = notes(document, renderer.note_numbers, run_text)
    except RecursionError as exc:
        raise ReaderError("not a valid .docx file (content nested too deeply)") from exc
    text = renderer.markdown(note_lines)
    if not text:
        raise ReaderError("empty document (no text in the .docx)")
    header = header_text(document)
    title = renderer.title or _core_title(document)
    if title is None and header is not None and len(header) <= _MAX_TITLE_CHARS:
        title = header
    metadata: dict[str, object] = {"tables": renderer.tables, "headings": renderer.headings}
    extras = {
        "numbered": renderer.numbered,
        "text_boxes": renderer.boxes,
        "footnotes": len(note_lines),
        "header": header,
    }
    metadata.update({key: value for key, value in extras.items() if value})
    return ParsedFile(
        text=text, doc_type=doc_type, fmt="markdown", title=title, encoding=None, metadata=metadata
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


def _styles(document: Any) -> Any | None:
    try:
        return document.styles.element
    except Exception as exc:  # noqa: BLE001 - a broken styles part must not sink the file
        log.debug("styles unreadable: %s", exc)
        return None


def _numbering(document: Any) -> Any | None:
    try:
        return document.part.numbering_part.element
    except Exception as exc:  # noqa: BLE001 - no or a broken numbering part: nothing numbered
        log.debug("numbering unreadable: %s", exc)
        return None


def _val(parent: Any, tag: str) -> str | None:
    """``w:val`` of ``parent``'s child ``tag`` (a Clark name such as :data:`_PSTYLE`)."""
    child = parent.find(tag) if parent is not None else None
    return child.get(_W_VAL) if child is not None else None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


class _Renderer:
    """Accumulates Markdown blocks from the body's paragraphs and tables, in document order."""

    def __init__(self, styles: StyleSheet, numbering: Numbering) -> None:
        self.styles = styles
        self.numbering = numbering
        self.note_numbers = NoteNumbers()
        self.blocks: list[str] = []
        self.list_lines: list[str] = []
        self.title: str | None = None
        self.first_heading: str | None = None
        self.tables = self.headings = self.numbered = self.boxes = 0
        self.style_counters: dict[int, int] = {}  # "List Number" styles without a definition

    # ------------------------------------------------------------------ structure

    def add_blocks(self, container: Any, depth: int = 0) -> None:
        for element in iter_blocks(container):
            if element.tag == _TBL:
                self._add_table(element)
            else:
                self._add_paragraph(element)
                self._add_boxes(element, depth)

    def _add_boxes(self, paragraph: Any, depth: int) -> None:
        if depth >= _MAX_BOX_DEPTH:
            return
        for box in text_boxes(paragraph):
            self.boxes += 1
            self.add_blocks(box, depth + 1)

    def _flush_list(self) -> None:
        if self.list_lines:
            self.blocks.append("\n".join(self.list_lines))
            self.list_lines = []

    def _add_table(self, table: Any) -> None:
        rendered = sheet_table(*table_grid(table, self._cell_text))
        if rendered:
            self._flush_list()
            self.blocks.append(rendered)
            self.tables += 1

    def _cell_text(self, cell: Any) -> str:
        parts: list[str] = []
        for element in iter_blocks(cell):
            if element.tag == _TBL:  # a nested table: its cells in reading order
                grid, _ = table_grid(element, self._cell_text)
                parts.extend(value for row in grid for value in row)
            else:
                parts.append(self._inline(element))
        return " ".join(part for part in parts if part)

    def _inline(self, paragraph: Any) -> str:
        """A paragraph on one line, its label and its text boxes included (table cells)."""
        label = self._label(paragraph)
        text = one_line(run_text(paragraph, self.note_numbers))
        if label is not None and label.text and text:
            text = label.text + label.suffix + text
        boxes = [self._cell_text(box) for box in text_boxes(paragraph)]
        return " ".join(part for part in (text, *boxes) if part)

    # ------------------------------------------------------------------ paragraphs

    def _label(self, paragraph: Any) -> Label | None:
        ppr = paragraph.find(_PPR)
        style_id = _val(ppr, _PSTYLE)
        resolved = self.numbering.resolve(ppr, style_id)
        if resolved is not None:
            return self.numbering.next_label(*resolved)
        return self._style_label(style_id)

    def _style_label(self, style_id: str | None) -> Label | None:
        """A ``List Bullet``/``List Number`` style whose numbering has no definition."""
        chain = self.styles.chain(style_id)
        match = _LIST_STYLE_RE.match(chain[0].name) if chain else None
        if match is None:
            return None
        level = int(match.group(3)) - 1 if match.group(3) else 0
        if (match.group(1) or "").lower() == "bullet" or match.group(2) == "项目符号":
            return Label("", True, level, " ")
        value = self.style_counters.get(level, 0) + 1
        self.style_counters[level] = value
        for deeper in [key for key in self.style_counters if key > level]:
            del self.style_counters[deeper]
        return Label(f"{value}.", False, level, " ")

    def _heading_level(self, ppr: Any, style_id: str | None) -> int | None:
        """Markdown heading level (1..6) of a paragraph, or None for body text."""
        level = _int(_val(ppr, _OUTLINE))
        if level is None:
            for info in self.styles.chain(style_id):
                if info.name.lower() in _TITLE_STYLES:
                    return 1
                match = _HEADING_STYLE_RE.match(info.name)
                if match:
                    return min(int(match.group(1)), 6)
                if info.outline_level is not None:
                    level = info.outline_level
                    break
        if level is None or not 0 <= level <= 8:
            return None
        return min(level + 1, 6)

    def _add_paragraph(self, paragraph: Any) -> None:
        ppr = paragraph.find(_PPR)
        style_id = _val(ppr, _PSTYLE)
        label = self._label(paragraph)  # counted even when empty, as Word counts it
        raw = normalize_newlines(run_text(paragraph, self.note_numbers))
        if not raw.strip():
            return
        prefix = label.text + label.suffix if label is not None and label.text else ""
        level = self._heading_level(ppr, style_id)
        if level is not None:
            text = prefix + one_line(raw)
            self._flush_list()
            self.blocks.append("#" * level + " " + text)
            self.headings += 1
            chain = self.styles.chain(style_id)
            if self.title is None and chain and chain[0].name.lower() in _TITLE_STYLES:
                self.title = text
            if self.first_heading is None:
                self.first_heading = text
            return
        if label is not None and label.bullet:
            self.list_lines.append("  " * min(label.level, 8) + "- " + one_line(raw))
            return
        self._flush_list()
        lines = [line.strip() for line in raw.split("\n") if line.strip()]
        if prefix:
            self.numbered += 1
            lines[0] = prefix + lines[0]
        self.blocks.append("\n".join(escape_block_start(line) for line in lines))

    def markdown(self, note_lines: list[str]) -> str:
        self._flush_list()
        if self.title is None:
            self.title = self.first_heading
        if note_lines:
            self.blocks.append(f"## {NOTES_HEADING}")
            self.blocks.append("\n".join(note_lines))
        return "\n\n".join(self.blocks).strip()


def _core_title(document: Any) -> str | None:
    try:
        title = document.core_properties.title
    except Exception:  # noqa: BLE001 - unreadable core properties: no title
        return None
    cleaned = one_line(title) if isinstance(title, str) else ""
    return cleaned or None
