"""A PDF's pages of lines and tables -> one Markdown-ish text for the structure chunker.

* Running headers, footers and page numbers are dropped (:mod:`rag_app.readers.pdf_running`).
* Each page's lines are put in reading order and grouped into paragraphs
  (:mod:`rag_app.readers.pdf_layout`); a paragraph that runs on over a page break (or from the
  left column into the right one) is joined: the line before the break reaches the right edge
  without ending a sentence and the next starts at the margin, not with a numbering marker.
* A table continued at the top of the next page with the same columns is one table
  (:func:`rag_app.readers.pdf_tables.merge_continued`), rendered as a GFM table.
* The body size is the size of most of the text. A short paragraph in a larger size (or bold
  when the body is not) that does not end a sentence is a ``#`` heading, its level from its
  style's rank (larger first, bold before regular). 第X条 lines stay body text: the chunker takes
  their article label as the heading. The title is the largest line in the upper half of the
  first page when it is clearly larger than the body.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from rag_app.chunking.headings import match_marker
from rag_app.readers._markdown import escape_block_start, one_line
from rag_app.readers.pdf_columns import order_lines
from rag_app.readers.pdf_layout import (
    Line,
    Paragraph,
    continues,
    ends_sentence,
    join_text,
    margins,
    normalize,
    paragraphs,
)
from rag_app.readers.pdf_running import find_running, is_page_number
from rag_app.readers.pdf_tables import Table, merge_continued, render_table

__all__ = ["Assembled", "PageLayout", "assemble"]

_MAX_HEADING_CHARS = 60
_MAX_TITLE_CHARS = 80
_BODY_PROSE_CHARS = 200  # text outside tables enough to tell the body size by itself
_LETTER = re.compile(r"[^\W\d_]")


@dataclass
class PageLayout:
    """One page: its lines (tables as lines with ``table`` set), or ``text`` when the page was
    OCR'd or read without layout."""

    number: int
    height: float
    lines: list[Line] = field(default_factory=list)
    text: str | None = None


@dataclass
class Assembled:
    text: str
    page_starts: list[int]
    title: str | None
    running_header: str | None
    running_footer: str | None
    tables: int


@dataclass
class _Block:
    kind: str  # "heading" | "para" | "table" | "plain"
    text: str = ""
    table: Table | None = None
    para: Paragraph | None = None
    margins: dict[int, tuple[float, float]] = field(default_factory=dict)
    marks: list[tuple[int, int]] = field(default_factory=list)  # (page index, offset or row)


def _body_style(pages: list[list[Paragraph]]) -> tuple[float, bool]:
    """The body text's size and whether it is bold: the commonest size by characters, of the
    text outside tables when there is enough of it (tables are often set smaller than the
    text), else of all text, tables included."""
    sizes: Counter[float] = Counter()
    prose: Counter[float] = Counter()  # outside tables
    bold = 0
    for paras in pages:
        for p in paras:
            table = p.first.table
            if isinstance(table, Table):
                sizes[round(table.size * 2) / 2] += table.chars
            elif table is None:
                sizes[round(p.size * 2) / 2] += len(p.text)
                prose[round(p.size * 2) / 2] += len(p.text)
                bold += len(p.text) if p.bold else 0
    if not sizes:
        return 0.0, False
    body = prose if prose.total() >= _BODY_PROSE_CHARS else sizes
    return body.most_common(1)[0][0], bold * 2 > body.total()


def _is_heading(p: Paragraph, body: float, body_bold: bool) -> bool:
    text = p.text
    if p.first.table is not None or len(text) > _MAX_HEADING_CHARS or len(p.lines) > 3:
        return False
    if ends_sentence(text) or not _LETTER.search(text) or text[-1] in "，,、":
        return False
    marker = match_marker(text)
    if marker is not None and marker.scheme == "article":
        return False
    bigger = p.size >= body + max(1.0, 0.1 * body)
    return bigger or (p.bold and not body_bold and p.size >= body - 0.5)


def _title(first: list[Paragraph], height: float, body: float) -> Paragraph | None:
    best: Paragraph | None = None
    for p in first:
        if p.first.table is not None or p.first.top > height * 0.5:
            continue
        if len(p.text) > _MAX_TITLE_CHARS or p.size < body * 1.15 or not _LETTER.search(p.text):
            continue
        if best is None or p.size > best.size + 0.1:
            best = p
    return best


def _title_goes_on(title: Paragraph, p: Paragraph) -> bool:
    """The next line of a title that wraps ("…采购目录与" / "价格标准（2026年版）"): right under
    it, in its size and weight, centred on the same axis or starting at the same x."""
    last, first = title.last, p.first
    return (
        first.table is None
        and abs(p.size - title.size) <= 0.6
        and first.bold == last.bold
        and 0 <= first.top - last.bottom <= 0.8 * title.size
        and (
            abs((first.x0 + first.x1) - (last.x0 + last.x1)) <= title.size
            or abs(first.x0 - last.x0) <= 0.5 * title.size
        )
        and len(title.text) + len(p.text) <= _MAX_TITLE_CHARS
    )


def _echoes(p: Paragraph, title: Paragraph) -> bool:
    """A smaller line above the title that says the same (a page header printing the title),
    alone or with other pieces of the header on its baseline ("标题      内部资料")."""
    if p.first.table is not None or p.last.bottom > title.first.top or p.size >= title.size:
        return False
    said = normalize(title.text)
    if normalize(p.text) == said:
        return True
    echo = next((ln for ln in p.lines if normalize(ln.text) == said), None)
    return echo is not None and all(
        abs(ln.bottom - echo.bottom) <= 0.3 * echo.size for ln in p.lines
    )


def _beside(p: Paragraph, echo: Paragraph, title: Paragraph) -> bool:
    """Another piece of the header an echo of the title is part of ("标题      内部资料"): one
    line in the echo's size, above the title, on the echo's baseline or right under it (a
    header whose tab pushed its right part onto a second line)."""
    line, size = p.first, echo.size
    return (
        len(p.lines) == 1
        and line.table is None
        and line.bottom <= title.first.top
        and abs(p.size - size) <= 0.15 * size
        and (
            abs(line.bottom - echo.last.bottom) <= 0.3 * size
            or 0 <= line.top - echo.last.bottom <= 0.8 * size
        )
    )


def _flows(prev: _Block, block: _Block) -> bool:
    """A paragraph that runs on over a page or column break (see the module docstring)."""
    if prev.kind != "para" or block.kind != "para" or prev.para is None or block.para is None:
        return False
    last, first = prev.para.last, block.para.first
    if ends_sentence(last.text):
        return False
    right = prev.margins.get(last.column, (last.x0, last.x1))[1]
    left = block.margins.get(first.column, (first.x0, first.x1))[0]
    if first.x0 - left > 0.8 * first.size:
        return False
    shifted = Line(first.text, last.x0, last.bottom, first.x1, last.bottom + first.height,
                   first.size, first.bold, first.lead)  # fmt: skip
    return continues(last, shifted, right, first=False, gap_limit=float("inf"))


def assemble(pages: list[PageLayout], meta_title: str | None) -> Assembled:
    """The document's text, page starts, title and running header/footer."""
    laid = [p for p in pages if p.text is None]
    running = find_running([(p.lines, p.height) for p in laid])
    drops = dict(zip((p.number for p in laid), running.drop, strict=True))
    ordered = [
        order_lines([ln for i, ln in enumerate(p.lines) if i not in drops.get(p.number, set())])
        for p in pages
    ]
    page_margins = [margins(lines) for lines in ordered]
    edges: dict[int, list[float]] = {}
    for found in page_margins:
        for column, (_, right) in found.items():
            edges.setdefault(column, []).append(right)
    rights = {column: statistics.median(values) for column, values in edges.items()}
    page_paras = [paragraphs(lines, rights) for lines in ordered]
    body, body_bold = _body_style(page_paras)
    title_para = _title(page_paras[0], pages[0].height, body) if page_paras else None
    if title_para is not None:
        first = page_paras[0]
        at = first.index(title_para)
        while at + 1 < len(first) and _title_goes_on(title_para, first[at + 1]):
            rest = first.pop(at + 1)
            title_para.text = join_text(title_para.text, rest.text)
            title_para.lines.extend(rest.lines)
    styles = sorted(
        {
            (round(p.size), p.bold)
            for paras in page_paras
            for p in paras
            if p is not title_para and _is_heading(p, body, body_bold)
        },
        key=lambda s: (-s[0], not s[1]),
    )
    running_header = running.header
    if title_para is not None:  # a one-page PDF's header that repeats the title (no repetition)
        echo = [p for p in page_paras[0] if p is not title_para and _echoes(p, title_para)]
        if echo:
            echo += [
                p
                for p in page_paras[0]
                if p is not title_para and p not in echo and _beside(p, echo[0], title_para)
            ]
            page_paras[0] = [p for p in page_paras[0] if p not in echo]
            running_header = running_header or one_line(title_para.text)
    base = 2 if title_para is not None else 1
    level = {s: min(base + k, 6) for k, s in enumerate(styles)}

    blocks: list[_Block] = []
    for index, (page, paras) in enumerate(zip(pages, page_paras, strict=True)):
        if page.text is not None:
            if page.text:
                blocks.append(_Block("plain", page.text, marks=[(index, 0)]))
            continue
        for k, p in enumerate(paras):
            table = p.first.table
            new_column = k > 0 and p.first.column == 2 and paras[k - 1].last.column == 1
            if isinstance(table, Table):
                prev = blocks[-1] if blocks else None
                begins = (
                    merge_continued(prev.table, table)
                    if (k == 0 or new_column) and prev is not None and prev.table is not None
                    else None
                )
                if prev is not None and begins is not None:
                    if k == 0:
                        prev.marks.append((index, begins))
                    continue
                blocks.append(_Block("table", table=table, marks=[(index, 0)]))
                continue
            if p is title_para:
                blocks.append(_Block("heading", "# " + p.text, para=p, marks=[(index, 0)]))
                continue
            if _is_heading(p, body, body_bold):
                hashes = "#" * level[(round(p.size), p.bold)]
                blocks.append(_Block("heading", f"{hashes} {p.text}", para=p, marks=[(index, 0)]))
                continue
            block = _Block("para", p.text, para=p, margins=page_margins[index])
            prev = blocks[-1] if blocks else None
            new_page = k == 0
            if prev is not None and (new_page or new_column) and _flows(prev, block):
                joined = join_text(prev.text, p.text)
                if new_page:
                    prev.marks.append((index, len(joined) - len(p.text)))
                prev.text, prev.para, prev.margins = joined, p, block.margins
                continue
            block.marks.append((index, 0))
            blocks.append(block)
    text, starts = _render(blocks, len(pages))
    title = meta_title or (one_line(title_para.text) if title_para is not None else None)
    if title is None and running_header and not is_page_number(running_header):
        title = running_header  # a running header names the document more often than not
    tables = sum(1 for b in blocks if b.kind == "table")
    return Assembled(text, starts, title, running_header, running.footer, tables)


def _row_offset(rendered: str, table: Table, row: int) -> int:
    """Where the table's grid row ``row`` starts in its rendering (0 if it can't be found)."""
    if row >= len(table.grid):
        return 0
    cells = [one_line(c).replace("|", "\\|") for c in table.grid[row]]
    sep = rendered.find("| ---")
    whole = rendered.find("\n| " + " | ".join(cells) + " |", sep)
    if sep >= 0 and whole >= 0:
        return whole + 1
    probe = next((c for c in cells if c), "")
    at = rendered.find(probe, sep) if probe and sep >= 0 else -1
    return rendered.rfind("\n", 0, at) + 1 if at >= 0 else 0


def _render(blocks: list[_Block], pages: int) -> tuple[str, list[int]]:
    parts: list[str] = []
    starts: list[int | None] = [None] * pages
    offset = 0
    for block in blocks:
        if block.kind == "table":
            assert block.table is not None
            rendered = render_table(block.table)
            if not rendered:
                continue
            marks = [(p, _row_offset(rendered, block.table, r) if r else 0) for p, r in block.marks]
            body = rendered
        else:
            body = block.text if block.kind == "heading" else escape_block_start(block.text)
            marks = block.marks
        if parts:
            offset += 2
        for page, at in marks:
            if starts[page] is None:
                starts[page] = offset + at
        parts.append(body)
        offset += len(body)
    text = "\n\n".join(parts)
    out: list[int] = []
    following = len(text)
    for value in reversed(starts):
        following = value if value is not None else following
        out.append(following)
    return text, out[::-1]
