"""The streaming side of the .xlsx reader (rag_app/readers/sheets.py): a sheet without merged
cells read row by row (openpyxl ``read_only``) and rendered as it is read, so that a sheet of a
million rows neither builds openpyxl's cell objects nor a grid of them.

* :func:`has_merged_cells`: whether any worksheet of the package declares merged cells
  (``<mergeCells>``, after a sheet's data), found by scanning each worksheet's XML as it is
  decompressed, a few MB at a time. Merged cells are resolved by the full load, which alone
  knows them.
* :class:`StreamedTable`: a sheet's rows (cell texts) in, its table out: the same text as
  ``sheet_table`` gives for the grid the full load would build, with one rendered line kept per
  row that has text (the grid's width is known only at the end: short lines are padded then).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_app.readers._markdown import escape_block_start

_READ = 4 * 1024 * 1024  # decompressed bytes read at a time while scanning a worksheet
_MERGE = b"mergeCell"  # <mergeCells>, <x:mergeCells …>: a false hit only costs the full load


def has_merged_cells(archive: zipfile.ZipFile) -> bool:
    """Whether a worksheet of the package (``xl/worksheets/*.xml``) mentions merged cells."""
    tail = len(_MERGE) - 1
    for info in archive.infolist():
        name = info.filename
        if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
            continue
        with archive.open(info) as part:
            carry = b""
            while block := part.read(_READ):
                if _MERGE in carry + block:
                    return True
                carry = block[-tail:]
    return False


def _line(cells: Sequence[str]) -> str:
    """A GFM table row of cells already made one-line (cell_text): pipes escaped."""
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


@dataclass
class StreamedTable:
    """A sheet without merged cells, fed row by row (:meth:`add`, every row from the first,
    the texts of its cells as ``cell_text`` gives them); :meth:`table` renders it as
    ``sheet_table`` renders the grid the full load builds (``_sheet_cells``)."""

    max_dense_cells: int
    rows_seen: int = 0
    rows: int = 0  # rows up to the last one with a cell (the full load's max_row)
    columns: int = 0  # the longest row, cells without a value included (its max_column)
    width: int = 0  # the last column holding text, over all rows
    first: int = -1  # the first row holding text (0-based)
    after_first_empty: bool = False  # the row right after it holds no text
    head: list[str] = field(default_factory=list)  # the first row's texts up to its last
    unseen: set[int] = field(default_factory=set)  # columns < width no row had text in yet
    lines: list[str] = field(default_factory=list)  # each row with text, rendered
    counts: list[int] = field(default_factory=list)  # its cells (up to its last with text)

    def add(self, texts: Sequence[str]) -> None:
        index = self.rows_seen
        self.rows_seen += 1
        if texts:
            self.rows = index + 1
            self.columns = max(self.columns, len(texts))
        last = len(texts) - 1
        while last >= 0 and not texts[last]:
            last -= 1
        if self.first >= 0 and index == self.first + 1:
            self.after_first_empty = last < 0
        if last < 0:
            return
        cells = texts[: last + 1]
        if self.first < 0:
            self.first, self.head = index, list(cells)
        if last + 1 > self.width:
            self.unseen.update(range(self.width, last + 1))
            self.width = last + 1
        if self.unseen:
            self.unseen.difference_update([c for c in self.unseen if c <= last and cells[c]])
        self.lines.append(_line(cells))
        self.counts.append(last + 1)

    @property
    def sparse(self) -> bool:
        """The full load reads this sheet from the cells that exist (``_sparse_cells``)."""
        return max(self.rows, 1) * max(self.columns, 1) > self.max_dense_cells

    def table(self) -> str | None:
        """The sheet's table (``""``: no text); None when the full load would drop empty
        columns (a sparse sheet with a column between its filled ones empty): the caller
        then builds that grid itself."""
        if self.first < 0:
            return ""
        if self.sparse and self.unseen:
            return None
        width = self.width
        # the rows the full load's table starts from: every row from the first with text
        # (a sparse sheet: only the rows with text)
        span = len(self.lines) if self.sparse else self.rows - self.first
        caption = ""
        header, body = 0, 1  # indexes into lines: the header's, the body's first
        if width > 1 and span > 2 and len(self.head) == width and len(set(self.head)) == 1:
            caption = self.head[0]
            if self.after_first_empty and not self.sparse:  # an empty row is the header
                header, body = -1, 1
            else:
                header, body = 1, 2
        if header < 0:
            if body >= len(self.lines):
                return ""  # no cell text below the banner
            head_line = "| " + " | ".join([""] * width) + " |"
        else:
            head_line = self._padded(header)
        parts = [head_line, "| " + " | ".join(["---"] * width) + " |"]
        parts.extend(self._padded(i) for i in range(body, len(self.lines)))
        table = "\n".join(parts)
        return f"{escape_block_start(caption)}\n\n{table}" if caption else table

    def _padded(self, i: int) -> str:
        return self.lines[i] + "  |" * (self.width - self.counts[i])
