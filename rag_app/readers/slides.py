"""PowerPoint reader (python-pptx): every slide a ``##`` section, rendered as Markdown.

A slide's title placeholder becomes ``## <title>`` (``## 幻灯片 N`` when it has none); its other
shapes follow in reading order (top to bottom, then left to right; groups are descended into):
text frames as paragraphs (one line per paragraph, indented levels as ``- `` items), tables as
GFM tables with merged cells filled, then the speaker notes as a ``备注：`` paragraph. The
document title is the core-properties title, else the title of a first slide that is a title
slide (a centred-title placeholder).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

from rag_app.readers._markdown import escape_block_start, gfm_table, one_line
from rag_app.readers.base import ParsedFile, ReaderError
from rag_app.readers.text import require_zip_package

__all__ = ["read_pptx"]

log = logging.getLogger(__name__)


def read_pptx(data: bytes) -> ParsedFile:
    """Read a ``.pptx`` deck into Markdown (``fmt="markdown"``)."""
    presentation = _open(data)
    sections: list[str] = []
    first_title: str | None = None
    tables = 0
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        title = one_line(title_shape.text_frame.text) if title_shape is not None else ""
        if number == 1 and _is_title_slide(title_shape):
            first_title = title or None
        blocks: list[str] = []
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                table = gfm_table(_table_rows(shape.table))
                if table:
                    blocks.append(table)
                    tables += 1
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                text = _text_frame(shape.text_frame)
                if text:
                    blocks.append(text)
        notes = _notes(slide)
        if notes:
            blocks.append(escape_block_start(f"备注：{notes}"))
        if blocks or title:
            heading = f"## {title or f'幻灯片 {number}'}"
            sections.append("\n\n".join([heading, *blocks]))
    text = "\n\n".join(sections)
    if not text:
        raise ReaderError("empty presentation (no text on any slide)")
    return ParsedFile(
        text=text,
        doc_type="pptx",
        fmt="markdown",
        title=_core_title(presentation) or first_title,
        encoding=None,
        metadata={"slides": len(presentation.slides), "tables": tables},
    )


def _is_title_slide(title_shape: Any) -> bool:
    """A title slide's title is a centred-title placeholder (the deck's title)."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    try:
        return bool(title_shape.placeholder_format.type == PP_PLACEHOLDER.CENTER_TITLE)
    except (AttributeError, ValueError):
        return False


def _open(data: bytes) -> Any:
    require_zip_package(data, ".pptx", "a legacy .ppt file; save as .pptx")
    try:
        from pptx import Presentation

        return Presentation(io.BytesIO(data))
    except MemoryError:  # over the parse's memory limit: not a broken file
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile/lxml/python-pptx raise many types
        raise ReaderError(f"not a valid .pptx file ({type(exc).__name__}: {exc})") from exc


def _reading_order(shapes: Any) -> Iterator[Any]:
    """Shapes top to bottom, then left to right; the members of a group in place of it."""

    def position(shape: Any) -> tuple[int, int]:
        return (shape.top or 0, shape.left or 0)

    for shape in sorted(shapes, key=position):
        if shape.shape_type is not None and int(shape.shape_type) == 6:  # MSO_SHAPE_TYPE.GROUP
            yield from _reading_order(shape.shapes)
        else:
            yield shape


def _text_frame(frame: Any) -> str:
    lines: list[str] = []
    for paragraph in frame.paragraphs:
        text = one_line("".join(run.text for run in paragraph.runs) or paragraph.text)
        if not text:
            continue
        level = int(paragraph.level or 0)
        lines.append(("  " * (level - 1) + "- " + text) if level else escape_block_start(text))
    return "\n".join(lines)


def _table_rows(table: Any) -> list[list[str]]:
    """Cell texts; a cell inside a merged range gets the text of the range's origin cell."""
    rows: list[list[str]] = []
    origins: dict[tuple[int, int], str] = {}
    for r, row in enumerate(table.rows):
        values: list[str] = []
        for c, cell in enumerate(row.cells):
            text = one_line(cell.text)
            if cell.is_merge_origin:
                for dr in range(cell.span_height):
                    for dc in range(cell.span_width):
                        origins[(r + dr, c + dc)] = text
            elif cell.is_spanned:
                text = origins.get((r, c), text)
            values.append(text)
        rows.append(values)
    return rows


def _notes(slide: Any) -> str:
    try:
        if not slide.has_notes_slide:
            return ""
        return one_line(slide.notes_slide.notes_text_frame.text)
    except Exception:  # noqa: BLE001 - a broken notes part is not worth failing over
        return ""


def _core_title(presentation: Any) -> str | None:
    try:
        title = presentation.core_properties.title
    except Exception:  # noqa: BLE001 - unreadable core properties: no title
        return None
    cleaned = one_line(title) if isinstance(title, str) else ""
    return cleaned or None
