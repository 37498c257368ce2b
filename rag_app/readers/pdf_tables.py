"""Ruled tables of a PDF page: ruling segments -> grid -> cells (merged ones too) -> text.

* Segments are snapped (ends within ``_SNAP`` pt share one coordinate) and joined (collinear
  pieces closer than ``_JOIN`` pt become one), then grouped into tables by connectivity (a
  horizontal and a vertical segment that touch belong to the same table).
* A table's grid is every distinct x of its vertical segments and y of its horizontal ones. Two
  neighbouring grid cells are one (merged) cell when no segment separates them at the middle of
  their shared side. A group of fewer than two rows or two columns is no table (a framed
  paragraph); its text stays in the flow.
* Each character belongs to the cell its centre falls in; a cell's wrapped lines are joined as
  paragraph lines are (Chinese without a space).
* :func:`merge_continued` appends a table continued on the next page (same column edges) to the
  one before it, dropping the continuation's repeated header rows; :func:`render_table` renders
  a table as the spreadsheet reader renders a sheet (merged cells filled, header rows folded).

Bounded: more than :data:`MAX_SEGMENT_PAIRS` horizontal x vertical candidates, a grid of more
than :data:`MAX_TABLE_CELLS` cells or more than :data:`MAX_PAGE_TABLES` tables on a page is not
analysed (the reader notes the page).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_app.chunking.headings import match_marker
from rag_app.readers.pdf_chars import PdfChar, Segment
from rag_app.readers.pdf_layout import Line, build_lines, join_text, normalize
from rag_app.readers.sheets import Span, header_depth, sheet_table

__all__ = [
    "MAX_SEGMENT_PAIRS",
    "MAX_PAGE_TABLES",
    "MAX_TABLE_CELLS",
    "Table",
    "TableLimit",
    "find_tables",
    "merge_continued",
    "render_table",
]

MAX_SEGMENT_PAIRS = 2_000_000
MAX_TABLE_CELLS = 20_000
MAX_PAGE_TABLES = 200
_SNAP = 2.0
_JOIN = 3.0
_TOUCH = 2.5
_MIN_CELL = 4.0  # grid lines closer than this (a double rule) are one


class TableLimit(Exception):
    """The page's rulings are over a limit: no table finding on it (the message says which)."""


@dataclass
class Table:
    x0: float
    top: float
    x1: float
    bottom: float
    xs: list[float]
    ys: list[float]
    grid: list[list[str]] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    size: float = 0.0  # the median font size of its text
    chars: int = 0  # how many characters it holds


def _cluster(values: list[float]) -> list[float]:
    """Sorted distinct values, those within ``_MIN_CELL`` of the previous kept one merged."""
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > _MIN_CELL:
            out.append(v)
    return out


def _snap_join(segs: list[Segment], horizontal: bool) -> list[Segment]:
    """Snap the constant coordinate, then join collinear overlapping/near pieces."""

    def pos(s: Segment) -> float:
        return s.top if horizontal else s.x0

    ordered = sorted(segs, key=pos)
    groups: list[list[Segment]] = []
    for s in ordered:
        if groups and pos(s) - pos(groups[-1][0]) <= _SNAP:
            groups[-1].append(s)
        else:
            groups.append([s])
    out: list[Segment] = []
    for group in groups:
        at = sum(pos(s) for s in group) / len(group)
        spans = sorted((s.x0, s.x1) if horizontal else (s.top, s.bottom) for s in group)
        lo, hi = spans[0]
        for a, b in spans[1:] + [(float("inf"), float("inf"))]:
            if a <= hi + _JOIN:
                hi = max(hi, b)
                continue
            out.append(Segment(lo, at, hi, at) if horizontal else Segment(at, lo, at, hi))
            lo, hi = a, b
    return out


def _components(hs: list[Segment], vs: list[Segment]) -> list[tuple[list[int], list[int]]]:
    if len(hs) * len(vs) > MAX_SEGMENT_PAIRS:
        raise TableLimit(f"{len(hs)} x {len(vs)} ruling lines")
    parent = list(range(len(hs) + len(vs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    hs_y = [h.top for h in hs]  # hs are sorted by y
    for j, v in enumerate(vs):
        lo = bisect.bisect_left(hs_y, v.top - _TOUCH)
        hi = bisect.bisect_right(hs_y, v.bottom + _TOUCH)
        for i in range(lo, hi):
            h = hs[i]
            if h.x0 - _TOUCH <= v.x0 <= h.x1 + _TOUCH:
                a, b = find(i), find(len(hs) + j)
                if a != b:
                    parent[a] = b
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for i in range(len(hs)):
        groups.setdefault(find(i), ([], []))[0].append(i)
    for j in range(len(vs)):
        groups.setdefault(find(len(hs) + j), ([], []))[1].append(j)
    return [g for g in groups.values() if len(g[0]) >= 2 and len(g[1]) >= 2]


def _nearest(values: list[float], v: float) -> int:
    i = bisect.bisect_left(values, v)
    if i == len(values) or (i > 0 and v - values[i - 1] < values[i] - v):
        return i - 1
    return i


def _covered(intervals: list[tuple[float, float]], at: float) -> bool:
    return any(a - _TOUCH <= at <= b + _TOUCH for a, b in intervals)


def _grid(hs: list[Segment], vs: list[Segment]) -> Table | None:
    xs = _cluster([v.x0 for v in vs])
    ys = _cluster([h.top for h in hs])
    rows, cols = len(ys) - 1, len(xs) - 1
    if rows < 2 or cols < 2:
        return None
    if rows * cols > MAX_TABLE_CELLS:
        raise TableLimit(f"a table grid of {rows} x {cols} cells")
    v_at: list[list[tuple[float, float]]] = [[] for _ in xs]
    for v in vs:
        v_at[_nearest(xs, v.x0)].append((v.top, v.bottom))
    h_at: list[list[tuple[float, float]]] = [[] for _ in ys]
    for h in hs:
        h_at[_nearest(ys, h.top)].append((h.x0, h.x1))
    parent = list(range(rows * cols))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for r in range(rows):
        mid_y = (ys[r] + ys[r + 1]) / 2
        for c in range(cols):
            if c + 1 < cols and not _covered(v_at[c + 1], mid_y):
                parent[find(r * cols + c)] = find(r * cols + c + 1)
            if r + 1 < rows and not _covered(h_at[r + 1], (xs[c] + xs[c + 1]) / 2):
                parent[find(r * cols + c)] = find((r + 1) * cols + c)
    boxes: dict[int, list[int]] = {}
    for r in range(rows):
        for c in range(cols):
            box = boxes.setdefault(find(r * cols + c), [r, c, r, c])
            box[0], box[1] = min(box[0], r), min(box[1], c)
            box[2], box[3] = max(box[2], r), max(box[3], c)
    spans = [(t, left, b, right) for t, left, b, right in boxes.values() if b > t or right > left]
    table = Table(xs[0], ys[0], xs[-1], ys[-1], xs, ys, spans=spans)
    table.grid = [[""] * cols for _ in range(rows)]
    return table


def find_tables(segments: Sequence[Segment]) -> list[Table]:
    """The ruled tables drawn by ``segments`` (empty cells; see :func:`fill_tables`). Raises
    :class:`TableLimit` when the rulings are over a limit."""
    hs = _snap_join([s for s in segments if s.horizontal and s.x1 - s.x0 >= 3], True)
    vs = _snap_join([s for s in segments if not s.horizontal and s.bottom - s.top >= 3], False)
    if len(hs) < 2 or len(vs) < 2:
        return []
    hs.sort(key=lambda s: s.top)
    tables: list[Table] = []
    for hi, vi in _components(hs, vs):
        table = _grid([hs[i] for i in hi], [vs[j] for j in vi])
        if table is not None:
            tables.append(table)
    if len(tables) > MAX_PAGE_TABLES:
        raise TableLimit(f"{len(tables)} ruled tables on one page")
    # a table drawn inside another one's cell is read as that cell's text
    tables.sort(key=lambda t: (t.x1 - t.x0) * (t.bottom - t.top), reverse=True)
    kept: list[Table] = []
    for t in tables:
        if not any(_inside(t, k) for k in kept):
            kept.append(t)
    return sorted(kept, key=lambda t: t.top)


def _inside(t: Table, outer: Table) -> bool:
    return (
        t.x0 >= outer.x0 - 1 and t.x1 <= outer.x1 + 1 and t.top >= outer.top - 1
    ) and t.bottom <= outer.bottom + 1


def fill_tables(tables: list[Table], chars: Sequence[PdfChar], page: int) -> list[PdfChar]:
    """Put every character inside a table into its cell; returns the characters outside."""
    if not tables:
        return list(chars)
    outside: list[PdfChar] = []
    cells: dict[tuple[int, int, int], list[PdfChar]] = {}
    anchors: list[dict[tuple[int, int], tuple[int, int]]] = []
    for t in tables:
        t.pages = [page]
        anchor: dict[tuple[int, int], tuple[int, int]] = {}
        for top, left, bottom, right in t.spans:
            for r in range(top, bottom + 1):
                for c in range(left, right + 1):
                    anchor[(r, c)] = (top, left)
        anchors.append(anchor)
    for ch in chars:
        cx, cy = (ch.x0 + ch.x1) / 2, (ch.top + ch.bottom) / 2
        for k, t in enumerate(tables):
            if t.x0 <= cx <= t.x1 and t.top <= cy <= t.bottom:
                c = min(max(bisect.bisect_right(t.xs, cx) - 1, 0), len(t.xs) - 2)
                r = min(max(bisect.bisect_right(t.ys, cy) - 1, 0), len(t.ys) - 2)
                r, c = anchors[k].get((r, c), (r, c))
                cells.setdefault((k, r, c), []).append(ch)
                break
        else:
            outside.append(ch)
    for k, t in enumerate(tables):
        sizes = sorted(ch.size for (i, _, _), mine in cells.items() if i == k for ch in mine)
        t.size, t.chars = (sizes[len(sizes) // 2], len(sizes)) if sizes else (0.0, 0)
    for (k, r, c), mine in cells.items():
        t = tables[k]
        right = next((s[3] for s in t.spans if s[0] == r and s[1] == c), c)
        text = ""
        prev: Line | None = None
        for line in build_lines(mine):
            if prev is not None and _cut_token(prev, line, t.xs[c], t.xs[right + 1]):
                text += line.text
            else:
                text = join_text(text, line.text)
            prev = line
        t.grid[r][c] = text
    return outside


_TIME = re.compile(r"\d{1,2}:\d{2}")


def _cut_token(prev: Line, line: Line, left: float, right: float) -> bool:
    """Whether a cell's line break cuts a number ("1500." | "42", "400" | "0"): the line
    before it is full to the cell's right edge (less the left padding), so the typesetter broke
    the number where it ran out of room; a time after a date ("2022-11-01" | "08:00:00") is a
    wrap at a space all the same. Words are not joined so ("512G" | "SSD" at a full line is a
    wrap at a space as often as "I" | "PS" is a cut word)."""
    a, b = prev.text[-1:], line.text[:1]
    if not (
        b.isdigit() and b.isascii() and (a.isdigit() or (a == "." and prev.text[-2:-1].isdigit()))
    ):
        return False
    if _TIME.match(line.text):
        return False
    width = (prev.x1 - prev.x0) / max(len(prev.text), 1)
    return right - (prev.x0 - left) - prev.x1 < 1.5 * width


def _header_rows(t: Table) -> int:
    return header_depth(t.grid, t.spans)


def _rest_of_row(last: list[str], head: list[str]) -> bool:
    """Whether ``head``, the first row on the next page, is the rest of ``last``, a row cut by
    the page break (Word and LibreOffice let a row break across pages): its first cell empty
    under a row that has one; or, in a table of three or more columns, a full row continued in
    at most half of its cells, the first of them no numbering marker (一、, （一）, 1.: a group
    label opening rows of its own)."""
    if not head[0]:
        return bool(last[0])
    filled = sum(1 for c in head if c)
    return (
        len(head) >= 3 and all(last) and filled * 2 <= len(head) and match_marker(head[0]) is None
    )


def merge_continued(first: Table, second: Table) -> int | None:
    """Append ``second`` (the top of the next page or column) to ``first`` when its columns
    start at the same offsets; its leading rows that repeat ``first``'s header are dropped, and
    a first row that is the rest of ``first``'s last row (:func:`_rest_of_row`) is joined to
    it. Returns the row of ``first`` where ``second`` begins, or None when it is no
    continuation."""
    if len(first.xs) != len(second.xs):
        return None
    # the columns' left edges (a borderless table's right edge is its longest cell's)
    starts = zip(first.xs[:-1], second.xs[:-1], strict=True)
    if any(abs((a - first.xs[0]) - (b - second.xs[0])) > 3.0 for a, b in starts):
        return None
    depth = min(_header_rows(first), len(second.grid))
    drop = 0
    if all(
        [normalize(c) for c in first.grid[r]] == [normalize(c) for c in second.grid[r]]
        for r in range(depth)
    ):
        drop = depth
    begins = len(first.grid)
    rest = second.grid[drop:] if drop < len(second.grid) else []
    split_row = (
        bool(rest)
        and any(rest[0])
        and _rest_of_row(first.grid[-1], rest[0])
        and not any(top <= drop <= bottom and left == 0 for top, left, bottom, _ in second.spans)
    )
    if split_row:
        first.grid[-1] = [join_text(a, b) for a, b in zip(first.grid[-1], rest[0], strict=True)]
        begins, drop = begins - 1, drop + 1
    offset = len(first.grid) - drop
    first.grid.extend(second.grid[drop:])
    for top, left, bottom, right in second.spans:
        if bottom >= drop:
            first.spans.append((max(top, drop) + offset, left, bottom + offset, right))
    first.pages.extend(second.pages)
    return begins


def render_table(t: Table) -> str:
    """The table as a GFM table (merged cells filled, a multi-row header folded)."""
    grid = [list(row) for row in t.grid]
    return sheet_table(grid, list(t.spans))
