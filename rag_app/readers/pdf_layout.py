"""Characters -> lines -> paragraphs in reading order, for one PDF page.

* Lines: characters are grouped into rows by their baseline (the bottom of the loose box), a row
  is cut into pieces where the horizontal gap is wider than about one character (a column gutter,
  a table column), and each piece is one :class:`Line`. Duplicate glyphs (a "bold" drawn twice
  with an offset) are dropped; a space is inserted between Latin words from the gap when the PDF
  has no space glyph.
* Columns: :mod:`rag_app.readers.pdf_columns` puts the lines in reading order first.
* Paragraphs: consecutive lines of one column are one paragraph unless the vertical gap is wide,
  the size or weight changes, the previous line stops short of the column's right edge (its next
  word would have fitted), the indentation changes as a new paragraph's does, or the line starts
  with a numbering marker (第X条, 一、, 1. ...). Wrapped lines are joined with :func:`join_text`.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_app.chunking.headings import match_marker
from rag_app.readers.pdf_chars import PdfChar

__all__ = [
    "Line",
    "Paragraph",
    "build_lines",
    "continues",
    "ends_sentence",
    "is_cjk",
    "join_text",
    "margins",
    "normalize",
    "paragraphs",
    "rejoin",
]

_BULLETS = frozenset("•●○◆◇■□▪▶►–—-*·")
_END_PUNCT = frozenset("。！？；：.!?;:")
_HYPHEN_END = re.compile(r"[A-Za-z]-$")


def is_cjk(ch: str) -> bool:
    """A Han character, kana, hangul or full-width punctuation: no space around it on a wrap."""
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFE30 <= code <= 0xFE4F
        or 0xFF00 <= code <= 0xFFEF
        or 0x20000 <= code <= 0x3FFFF
        or ch in "“”‘’…—·"
    )


def join_text(left: str, right: str) -> str:
    """Join a wrapped line to the next: no space after or before a CJK character, one space
    between Latin words, a hyphenation ("inter-" + "national") undone, a compound's hyphen
    ("Type-" + "C", "fi-" + "8170") kept without a space."""
    if not left:
        return right
    if not right:
        return left
    a, b = left[-1], right[0]
    if a == "-" and _HYPHEN_END.search(left) and b.islower():
        return left[:-1] + right
    if is_cjk(a) or is_cjk(b) or a.isspace() or b.isspace():
        return left + right
    if a == "-" and len(left) > 1 and left[-2].isalnum() and b.isalnum():
        return left + right
    return left + " " + right


@dataclass(slots=True)
class Line:
    """A piece of a row of text (or a table's place on the page, ``table`` set)."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float
    bold: bool
    lead: float = 0.0  # width of the first word (Latin) or character (CJK)
    table: object | None = None
    column: int = 0  # 0: full width, 1: left, 2: right (set by order_lines)
    row: int = -1  # the row of characters it was cut from (build_lines)
    chars: list[PdfChar] = field(default_factory=list, repr=False)  # until rejoin()

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclass
class Paragraph:
    text: str
    lines: list[Line] = field(default_factory=list)

    @property
    def first(self) -> Line:
        return self.lines[0]

    @property
    def last(self) -> Line:
        return self.lines[-1]

    @property
    def size(self) -> float:
        return max(line.size for line in self.lines)

    @property
    def bold(self) -> bool:
        return all(line.bold for line in self.lines)


def _piece(chars: Sequence[PdfChar]) -> Line:
    parts: list[str] = []
    prev: PdfChar | None = None
    for ch in chars:
        if prev is not None and not ch.text.isspace() and not prev.text.isspace():
            # a space the PDF positioned instead of drawing: PDFium's word-space guess, or a
            # quarter em between Latin characters
            latin = not (is_cjk(ch.text) or is_cjk(prev.text))
            if ch.space or (latin and ch.x0 - prev.x1 > 0.25 * max(ch.size, 1.0)):
                parts.append(" ")
        parts.append(ch.text)
        prev = ch
    text = " ".join("".join(parts).split())
    ink = [c for c in chars if not c.text.isspace()] or list(chars)
    sizes = sorted(c.size for c in ink)
    lead_end = ink[0].x1
    if not is_cjk(ink[0].text):
        for c in ink:
            if c.x0 - lead_end > 0.2 * c.size:
                break
            lead_end = c.x1
    return Line(
        text=text,
        x0=min(c.x0 for c in chars),
        top=min(c.top for c in ink),
        x1=max(c.x1 for c in chars),
        bottom=max(c.bottom for c in ink),
        size=sizes[len(sizes) // 2],
        bold=sum(c.bold for c in ink) * 2 > len(ink),
        lead=lead_end - ink[0].x0,
    )


def build_lines(chars: Sequence[PdfChar], split: float = 1.0) -> list[Line]:
    """Rows of characters cut at gaps wider than ``split`` times the font size (and than
    ``5 * split`` pt);
    top to bottom, left to right. O(n log n). Each line keeps its characters for
    :func:`rejoin` (which frees them)."""
    if not chars:
        return []
    ordered = sorted(chars, key=lambda c: c.bottom)
    rows: list[list[PdfChar]] = []
    row: list[PdfChar] = []
    base = ordered[0].bottom
    tol = 0.0
    for ch in ordered:
        if row and ch.bottom - base > tol:
            rows.append(row)
            row = []
        if not row:
            base, tol = ch.bottom, max(2.0, 0.3 * ch.size)
        row.append(ch)
    rows.append(row)
    lines: list[Line] = []

    def emit(piece: list[PdfChar], number: int) -> None:
        if any(not c.text.isspace() for c in piece):
            line = _piece(piece)
            line.row, line.chars = number, piece
            if line.text:
                lines.append(line)

    for number, row in enumerate(rows):
        row.sort(key=lambda c: c.x0)
        piece: list[PdfChar] = []
        for ch in row:
            if piece:
                prev = piece[-1]
                if ch.text == prev.text and abs(ch.x0 - prev.x0) < 0.12 * max(ch.size, 1.0):
                    continue  # the same glyph drawn twice (fake bold, shadow)
                if ch.x0 - prev.x1 > split * max(ch.size, prev.size, 5.0):
                    emit(piece, number)
                    piece = []
            piece.append(ch)
        if piece:
            emit(piece, number)
    return lines


def rejoin(lines: Sequence[Line], split: float = 1.0) -> list[Line]:
    """Pieces of one row cut finer than ``split`` (see :func:`build_lines`) joined again where
    their gap is narrower; every line's characters are released."""
    out: list[Line] = []
    for line in lines:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.table is None
            and line.table is None
            and prev.row == line.row >= 0
            and line.x0 - prev.x1 <= split * max(line.size, prev.size, 5.0)
        ):
            merged = _piece(prev.chars + line.chars)
            merged.row, merged.chars = line.row, prev.chars + line.chars
            out[-1] = merged
        else:
            out.append(line)
    for line in out:
        line.chars = []
    return out


_CLAUSE_END = frozenset("。；;：:！？!?")


def _starts_block(text: str, after: str = "。") -> bool:
    """Whether a line starting with ``text`` opens a new block (a bullet, a numbering marker)
    after a line ending with ``after``: a numbered item's marker (（二）, 1.) right after a line
    that ends mid-sentence is a wrapped citation ("修正案" + "（二）》"); 第X条/章/节 always open."""
    if text[0] in _BULLETS and len(text) > 1 and text[1] in " \u3000":
        return True
    marker = match_marker(text) if text[0] in "第（(一二三四五六七八九十0123456789" else None
    if marker is None:
        return False
    return marker.scheme in ("article", "part", "chapter", "section") or after[-1:] in _CLAUSE_END


def margins(lines: Sequence[Line]) -> dict[int, tuple[float, float]]:
    out: dict[int, tuple[float, float]] = {}
    for column in {ln.column for ln in lines}:
        mine = [ln for ln in lines if ln.column == column and ln.table is None]
        if mine:
            out[column] = (min(ln.x0 for ln in mine), max(ln.x1 for ln in mine))
    return out


def continues(
    prev: Line,
    line: Line,
    right: float,
    *,
    first: bool,
    gap_limit: float,
    indent_at: float | None = None,
) -> bool:
    """Whether ``line`` continues the paragraph whose last line is ``prev`` (``first``: ``prev``
    is that paragraph's first line; ``right``: the column's right edge; ``indent_at``: the x of
    the first-line indent when the page's paragraphs use one, a line there opens a paragraph)."""
    if prev.table is not None or line.table is not None or not line.text:
        return False
    if abs(prev.size - line.size) > 0.6 or prev.bold != line.bold:
        return False
    if line.top - prev.bottom > gap_limit:
        return False
    room = right - prev.x1
    if room > line.lead + 0.6 * line.size:
        return False  # the next word would have fitted: the previous line ended a paragraph
    if _starts_block(line.text, prev.text.rstrip("”’\"')）」』")):
        return False
    indent = line.x0 - prev.x0
    unit = 0.8 * line.size
    if indent > unit:  # indented: a hanging list item's continuation, else a new paragraph
        return first and _starts_block(prev.text)
    if indent < -unit:  # outdented: the body under a first-line indent, else a new item
        return first
    # first-line indents in use: a line at the indent is a new paragraph's first line
    return indent_at is None or abs(line.x0 - indent_at) > 0.5 * line.size


def _first_line_indent(lines: Sequence[Line], left: float) -> float | None:
    """The x where this column's paragraphs start when they use a first-line indent: at least
    two indented lines (1-4 em) followed by a line at the margin, and none by a line at the
    same indent that is no new paragraph's (cannot be told here, so: the common x)."""
    starts: list[float] = []
    for a, b in zip(lines, lines[1:], strict=False):
        if a.table is not None or b.table is not None or b.top <= a.top:
            continue
        if 0.8 * a.size < a.x0 - left < 4.2 * a.size and abs(b.x0 - left) < 0.5 * b.size:
            starts.append(a.x0)
    if len(starts) < 2:
        return None
    return statistics.median(starts)


def paragraphs(lines: list[Line], rights: dict[int, float] | None = None) -> list[Paragraph]:
    """Group ordered lines (see :func:`rag_app.readers.pdf_columns.order_lines`) into paragraphs; a table line is a
    paragraph of its own (empty text, ``first.table`` set). ``rights``: the document's usual
    right edge of each column, for a page whose longest line stops short of it (a last page)."""
    if not lines:
        return []
    page_margins = margins(lines)
    for column, edge in (rights or {}).items():
        if column in page_margins:
            left, right = page_margins[column]
            page_margins[column] = (left, max(right, edge))
    gaps = [
        b.top - a.bottom
        for a, b in zip(lines, lines[1:], strict=False)
        if a.column == b.column and a.table is None and b.table is None and b.top > a.top
    ]
    typical = statistics.median(gaps) if gaps else 0.0
    indents = {
        column: _first_line_indent([ln for ln in lines if ln.column == column], edges[0])
        for column, edges in page_margins.items()
    }
    out: list[Paragraph] = []
    for line in lines:
        if out and line.column == out[-1].last.column and line.top > out[-1].last.top:
            para = out[-1]
            prev = para.last
            right = page_margins.get(line.column, (0.0, prev.x1))[1]
            limit = max(typical, 0.0) + max(1.5, 0.25 * line.size)
            first = len(para.lines) == 1
            indent_at = indents.get(line.column)
            if continues(prev, line, right, first=first, gap_limit=limit, indent_at=indent_at):
                para.text = join_text(para.text, line.text)
                para.lines.append(line)
                continue
        out.append(Paragraph(line.text if line.table is None else "", [line]))
    return out


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends with sentence-final punctuation (or a closing quote after it)."""
    stripped = text.rstrip("”’\"')）」』")
    return bool(stripped) and stripped[-1] in _END_PUNCT


def normalize(text: str) -> str:
    """NFKC without whitespace: how running headers and repeated table headers are compared."""
    return "".join(unicodedata.normalize("NFKC", text).split())
