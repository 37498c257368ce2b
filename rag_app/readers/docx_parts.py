"""The pieces of a .docx body below the paragraph: run text, text boxes, notes, table grids.

* A paragraph's text is its own runs (tracked insertions kept, deletions and ``mc:Fallback``
  copies dropped), not the runs of the text boxes anchored in it; a footnote or endnote reference
  becomes a ``[^n]`` marker, numbered in order of first reference as Word numbers them.
* Text boxes (``w:txbxContent``, in DrawingML or VML) are read once, in place after the paragraph
  that anchors them: Word stores a modern text box twice, as ``mc:Choice`` and as a VML
  ``mc:Fallback`` copy; the fallback is read only when no choice of it holds a text box.
* Headers and footers live in their own parts and never enter the body text; the first default
  header's text is offered as title context (:func:`header_text`).
* Tables are laid out on their grid: ``w:gridSpan`` (horizontal merge, also ``w:gridBefore``)
  and ``w:vMerge`` (vertical merge) give the merged ranges that the spreadsheet readers fill.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml import parse_xml
from docx.oxml.ns import qn
from lxml import etree

__all__ = [
    "MAX_TABLE_COLUMNS",
    "NoteNumbers",
    "header_text",
    "iter_blocks",
    "notes",
    "run_text",
    "table_grid",
    "text_boxes",
]

MAX_TABLE_COLUMNS = 256  # Word allows 63; a hostile w:gridSpan is clamped to this grid width
_MAX_NESTING = 64  # content controls / custom XML wrappers descended into

_P, _TBL, _TR, _TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_SDT, _SDT_CONTENT, _CUSTOM_XML = qn("w:sdt"), qn("w:sdtContent"), qn("w:customXml")
_TXBX = qn("w:txbxContent")
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
_FALLBACK, _CHOICE, _ALTERNATE = (
    f"{{{_MC}}}Fallback",
    f"{{{_MC}}}Choice",
    f"{{{_MC}}}AlternateContent",
)
_FOOTNOTE_REF, _ENDNOTE_REF = qn("w:footnoteReference"), qn("w:endnoteReference")
_SKIP_ANCESTORS = frozenset({qn("w:del"), qn("w:moveFrom"), _FALLBACK, _TXBX})
_VAL = qn("w:val")


def iter_blocks(container: Any, depth: int = 0) -> Iterator[Any]:
    """The ``w:p`` and ``w:tbl`` elements of a body, cell or text box in document order;
    content controls (``w:sdt``) and custom-XML wrappers are descended into."""
    for child in container.iterchildren():
        tag = child.tag
        if tag in (_P, _TBL):
            yield child
        elif depth < _MAX_NESTING and tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from iter_blocks(content, depth + 1)
        elif depth < _MAX_NESTING and tag == _CUSTOM_XML:
            yield from iter_blocks(child, depth + 1)


def _own(element: Any, paragraph: Any) -> bool:
    """Is ``element`` (inside ``paragraph``) outside deletions, fallbacks and text boxes?"""
    node = element.getparent()
    while node is not None and node is not paragraph:
        if node.tag in _SKIP_ANCESTORS:
            return False
        node = node.getparent()
    return True


class NoteNumbers:
    """Footnote/endnote ids in order of first reference: the numbers Word shows."""

    def __init__(self) -> None:
        self.footnotes: dict[str, int] = {}
        self.endnotes: dict[str, int] = {}

    def mark(self, run: Any) -> str:
        markers: list[str] = []
        for child in run.iterchildren(_FOOTNOTE_REF, _ENDNOTE_REF):
            note_id = child.get(qn("w:id"))
            if note_id is None:
                continue
            if child.tag == _FOOTNOTE_REF:
                number = self.footnotes.setdefault(note_id, len(self.footnotes) + 1)
                markers.append(f"[^{number}]")
            else:
                number = self.endnotes.setdefault(note_id, len(self.endnotes) + 1)
                markers.append(f"[^e{number}]")
        return "".join(markers)


_T, _TAB, _PTAB, _BR, _CR = qn("w:t"), qn("w:tab"), qn("w:ptab"), qn("w:br"), qn("w:cr")
_NB_HYPHEN, _R = qn("w:noBreakHyphen"), qn("w:r")
_BR_TYPE = qn("w:type")


def _one_run(run: Any) -> str:
    """A run's text as python-docx reads it (tabs, line breaks, non-breaking hyphens)."""
    parts: list[str] = []
    for child in run.iterchildren():
        tag = child.tag
        if tag == _T:
            parts.append(child.text or "")
        elif tag in (_TAB, _PTAB):
            parts.append("\t")
        elif tag == _BR:
            if child.get(_BR_TYPE) in (None, "textWrapping"):
                parts.append("\n")
        elif tag == _CR:
            parts.append("\n")
        elif tag == _NB_HYPHEN:
            parts.append("-")
    return "".join(parts)


def run_text(paragraph: Any, notes_seen: NoteNumbers | None = None) -> str:
    """The text of a paragraph's own runs (see the module docstring)."""
    parts: list[str] = []
    for run in paragraph.iter(_R):
        if not _own(run, paragraph):
            continue
        parts.append(_one_run(run))
        if notes_seen is not None:
            parts.append(notes_seen.mark(run))
    return "".join(parts).replace("\x00", "")


def text_boxes(paragraph: Any) -> list[Any]:
    """The outermost text boxes anchored in a paragraph, each once."""
    found: list[Any] = []
    for box in paragraph.iter(_TXBX):
        node = box.getparent()
        keep = True
        while node is not None and node is not paragraph:
            if node.tag == _TXBX:
                keep = False
                break
            if node.tag == _FALLBACK:
                alternate = node.getparent()
                if alternate is not None and any(
                    choice.find(f".//{_TXBX}") is not None
                    for choice in alternate.iterchildren(_CHOICE)
                ):
                    keep = False
                    break
            node = node.getparent()
        if keep:
            found.append(box)
    return found


def _related_parts(document: Any, reltype: str) -> list[Any]:
    try:
        rels = document.part.rels.values()
        return [rel.target_part for rel in rels if rel.reltype == reltype and not rel.is_external]
    except Exception:  # noqa: BLE001 - a broken relationship: no such part
        return []


def _part_element(part: Any) -> Any | None:
    element = getattr(part, "element", None)
    if element is not None:
        return element
    try:
        return parse_xml(part.blob)
    except (etree.XMLSyntaxError, ValueError):
        return None


def notes(document: Any, numbers: NoteNumbers, paragraph_text: Callable[[Any], str]) -> list[str]:
    """``[^n]: text`` lines for the footnotes, then the endnotes, that the body references, in
    the order of their numbers."""
    lines: list[str] = []
    kinds = (
        (RT.FOOTNOTES, qn("w:footnote"), numbers.footnotes, ""),
        (RT.ENDNOTES, qn("w:endnote"), numbers.endnotes, "e"),
    )
    for reltype, tag, referenced, prefix in kinds:
        if not referenced:
            continue
        texts: dict[str, str] = {}
        for part in _related_parts(document, reltype):
            root = _part_element(part)
            if root is None:
                continue
            for note in root.iterchildren(tag):
                note_id = note.get(qn("w:id"))
                if note_id in referenced and note_id not in texts:
                    body = " ".join(paragraph_text(p) for p in note.iter(_P))
                    texts[note_id] = " ".join(body.split())
        for note_id, number in sorted(referenced.items(), key=lambda item: item[1]):
            if texts.get(note_id):
                lines.append(f"[^{prefix}{number}]: {texts[note_id]}")
    return lines


def header_text(document: Any) -> str | None:
    """The first section's default header text (one line), if it has one."""
    try:
        sections = document.sections
        if not len(sections):
            return None
        header = sections[0].header
        if header.is_linked_to_previous:
            return None
        text = " ".join(" ".join(run_text(p) for p in header._element.iter(_P)).split())
    except Exception:  # noqa: BLE001 - a broken header part is not worth failing over
        return None
    return text or None


def _span(tc: Any) -> int:
    tcpr = tc.find(qn("w:tcPr"))
    grid_span = tcpr.find(qn("w:gridSpan")) if tcpr is not None else None
    try:
        value = int(grid_span.get(_VAL)) if grid_span is not None else 1
    except (TypeError, ValueError):
        value = 1
    return min(max(value, 1), MAX_TABLE_COLUMNS)


def _vmerge(tc: Any) -> str | None:
    """``"restart"``, ``"continue"`` or None (not vertically merged)."""
    tcpr = tc.find(qn("w:tcPr"))
    merge = tcpr.find(qn("w:vMerge")) if tcpr is not None else None
    if merge is None:
        return None
    return "restart" if merge.get(_VAL) == "restart" else "continue"


def _wrapped(container: Any, tag: str, depth: int = 0) -> Iterator[Any]:
    """The ``tag`` children of ``container`` (a table's rows, a row's cells), also those
    wrapped in content controls or custom XML (at most ``_MAX_NESTING`` deep)."""
    for child in container.iterchildren():
        if child.tag == tag:
            yield child
        elif depth < _MAX_NESTING and child.tag in (_SDT, _CUSTOM_XML):
            inner = child.find(_SDT_CONTENT) if child.tag == _SDT else child
            if inner is not None:
                yield from _wrapped(inner, tag, depth + 1)


Span = tuple[int, int, int, int]


def table_grid(table: Any, cell_text: Callable[[Any], str]) -> tuple[list[list[str]], list[Span]]:
    """A table's cell texts on its grid and its merged ranges (0-based, inclusive), as the
    spreadsheet readers take them; ``cell_text`` is called once per cell in document order."""
    grid: list[list[str]] = []
    spans: list[Span] = []
    open_vertical: dict[int, int] = {}  # grid column -> index in spans of the range it continues
    for row in _wrapped(table, _TR):
        values: list[str] = []
        trpr = row.find(qn("w:trPr"))
        before = trpr.find(qn("w:gridBefore")) if trpr is not None else None
        try:
            skip = int(before.get(_VAL)) if before is not None else 0
        except (TypeError, ValueError):
            skip = 0
        values.extend([""] * min(max(skip, 0), MAX_TABLE_COLUMNS))
        r = len(grid)
        continued: set[int] = set()
        for tc in _wrapped(row, _TC):
            if len(values) >= MAX_TABLE_COLUMNS:
                break
            c = len(values)
            width = min(_span(tc), MAX_TABLE_COLUMNS - c)
            text = cell_text(tc)
            merge = _vmerge(tc)
            if merge == "continue" and c in open_vertical:
                index = open_vertical[c]
                top, left, _, right = spans[index]
                spans[index] = (top, left, r, right)
                continued.add(c)
                text = ""
            elif merge == "restart" or width > 1:
                spans.append((r, c, r, c + width - 1))
                if merge == "restart":
                    open_vertical[c] = len(spans) - 1
                    continued.add(c)
            values.append(text)
            values.extend([""] * (width - 1))
        for column in [col for col in open_vertical if col not in continued]:
            del open_vertical[column]
        grid.append(values)
    width = max((len(row) for row in grid), default=0)
    for row in grid:
        row.extend([""] * (width - len(row)))
    spans = [s for s in spans if s[2] > s[0] or s[3] > s[1]]
    return grid, spans
