"""Borderless tables of a PDF page: rows of line pieces whose columns align, conservatively.

A run of consecutive rows (pieces on one baseline, see :func:`rag_app.readers.pdf_layout.build_lines`)
is a table when:

* its pieces fall into at least ``MIN_COLUMNS`` (3) column bands: the x-intervals of the pieces,
  overlapping ones merged, with no piece spanning two bands;
* at least ``MIN_ROWS`` (3) rows fill two bands or more, the first row (the header) fills every
  band, and the rows stand close together (a gap under twice the line height);
* its cells are short (median piece under 40 % of the table's width): running text in two or
  three columns is no table.

A row with its first column empty that hangs right under the previous one (gap under half a line)
is a wrapped continuation, and so is every row closer to the one above than the table's rows
are to each other (when they are spaced apart more than a cell's lines): its pieces are joined
to the cells above. Two-column tables and tables
without a header filling every column are left as text: a false table hurts more than a missed one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from rag_app.readers.pdf_layout import Line, join_text
from rag_app.readers.pdf_tables import Table

__all__ = ["MIN_COLUMNS", "MIN_ROWS", "find_borderless"]

MIN_COLUMNS = 3
MIN_ROWS = 3
MAX_COLUMNS = 40  # more aligned bands than this is no table (and would cost bands x pieces)


def _rows(lines: Sequence[Line]) -> list[list[Line]]:
    rows: list[list[Line]] = []
    for line in sorted(lines, key=lambda ln: ln.bottom):
        if rows and line.bottom - rows[-1][0].bottom <= max(2.0, 0.3 * line.size):
            rows[-1].append(line)
        else:
            rows.append([line])
    for row in rows:
        row.sort(key=lambda ln: ln.x0)
    return rows


def _bands(rows: Sequence[Sequence[Line]]) -> list[tuple[float, float]]:
    spans = sorted((ln.x0, ln.x1) for row in rows for ln in row)
    bands: list[list[float]] = []
    for a, b in spans:
        if bands and a <= bands[-1][1] + 1.0:
            bands[-1][1] = max(bands[-1][1], b)
        else:
            bands.append([a, b])
    return [(a, b) for a, b in bands]


def _band_of(bands: Sequence[tuple[float, float]], line: Line) -> int:
    for k, (a, b) in enumerate(bands):
        if a - 1.0 <= line.x0 and line.x1 <= b + 1.0:
            return k
    return -1


def _table(rows: list[list[Line]]) -> Table | None:
    bands = _bands(rows)
    if len(bands) < MIN_COLUMNS:
        return None
    width = bands[-1][1] - bands[0][0]
    pieces = [ln for row in rows for ln in row]
    if statistics.median(ln.x1 - ln.x0 for ln in pieces) > 0.4 * width:
        return None
    gaps = [
        min(ln.top for ln in b) - max(ln.bottom for ln in a)
        for a, b in zip(rows, rows[1:], strict=False)
    ]
    height = statistics.median(ln.height for ln in pieces)
    tight = min(gaps, default=0.0) + 0.3 * height
    # rows spaced apart more than a cell's wrapped lines: the tight gaps are wraps
    wraps_apart = bool(gaps) and max(gaps) > tight
    grid: list[list[str]] = []
    for k, row in enumerate(rows):
        cells = [""] * len(bands)
        for ln in row:
            i = _band_of(bands, ln)
            cells[i] = join_text(cells[i], ln.text)
        gap = gaps[k - 1] if k else 0.0
        wrapped = wraps_apart and gap < tight
        hangs = not cells[0] and gap < 0.5 * height
        if grid and (wrapped or hangs):
            grid[-1] = [join_text(a, b) for a, b in zip(grid[-1], cells, strict=True)]
        else:
            grid.append(cells)
    if len(grid) < MIN_ROWS or not all(grid[0]):
        return None
    if sum(1 for r in grid if sum(1 for c in r if c) >= 2) < MIN_ROWS:
        return None
    xs = [a for a, _ in bands] + [bands[-1][1]]
    ys = [min(ln.top for ln in row) for row in rows] + [max(ln.bottom for ln in rows[-1])]
    table = Table(xs[0], ys[0], xs[-1], ys[-1], xs, ys, grid=grid)
    table.size = statistics.median(ln.size for ln in pieces)
    table.chars = sum(len(ln.text) for ln in pieces)
    return table


def find_borderless(lines: list[Line], page: int) -> tuple[list[Table], list[Line]]:
    """The borderless tables among a page's text lines, and the lines left outside them."""
    text = [ln for ln in lines if ln.table is None]
    if len(text) < MIN_ROWS * 2:
        return [], lines
    rows = _rows(text)
    tables: list[Table] = []
    used: set[int] = set()
    i = 0
    while i < len(rows):
        if len(rows[i]) < 2:
            i += 1
            continue
        j = i + 1
        while j < len(rows):  # close rows with at least one gap-separated piece or hanging
            gap = min(ln.top for ln in rows[j]) - max(ln.bottom for ln in rows[j - 1])
            if gap > 2 * max(ln.height for ln in rows[j - 1]):
                break
            if len(rows[j]) < 2:  # a wrapped cell hangs close, a paragraph line is wide
                lone = rows[j][0]
                run_width = max(ln.x1 for ln in rows[i]) - min(ln.x0 for ln in rows[i])
                if gap >= 0.5 * lone.height or lone.x1 - lone.x0 > 0.5 * run_width:
                    break
            j += 1
        run = rows[i:j]
        if len(run) >= MIN_ROWS:
            bands = _bands(run)
            spanning = len(bands) > MAX_COLUMNS or any(
                _band_of(bands, ln) < 0 for row in run for ln in row
            )
            table = None if spanning else _table(run)
            if table is not None:
                table.pages = [page]
                tables.append(table)
                used.update(id(ln) for row in run for ln in row)
                i = j
                continue
        i = max(j, i + 1)  # the run is no table: nor is a run starting inside it (linear time)
    if not tables:
        return [], lines
    return tables, [ln for ln in lines if id(ln) not in used]
