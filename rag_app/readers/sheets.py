"""Spreadsheet readers: ``.xlsx``/``.xlsm`` (openpyxl), legacy ``.xls`` (xlrd) and ``.csv``,
rendered as Markdown.

Every sheet becomes ``## <sheet name>`` followed by one GFM table, so the chunker treats it like
any other Markdown table (a long sheet is split by rows with the header repeated). A CSV file is a
single sheet named after the file (as a spreadsheet program names it).

Merged cells are resolved: every cell of a merged range gets the range's value, so each row stands
on its own. The header is the first non-empty row plus the rows below it that a merged header cell
spans or that sit under a horizontally merged header cell (a two-row header such as
``保费（元）`` over ``男 | 女``); a multi-row header is folded into one row, the distinct values of a
column joined with ``/`` (``保费（元）/男``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import logging
import zipfile
from collections.abc import Iterator, Sequence
from typing import Any

from rag_app.readers._markdown import escape_block_start, gfm_table, one_line
from rag_app.readers.base import ParsedFile, ReaderError
from rag_app.readers.sheet_xml import can_read, sheet_rows
from rag_app.readers.sheets_stream import StreamedTable, has_merged_cells
from rag_app.readers.text import decode_text, normalize_newlines, require_zip_package, sniff_binary

__all__ = ["fold_header", "header_depth", "read_csv", "read_xls", "read_xlsx", "render_sheets"]

log = logging.getLogger(__name__)

#: A header is never taken to be deeper than this many rows.
MAX_HEADER_ROWS = 4
HEADER_JOINER = "/"

# A merged range as 0-based inclusive (first_row, first_col, last_row, last_col).
Span = tuple[int, int, int, int]


def cell_text(value: object) -> str:
    """A cell value as display text: whole floats without ``.0``, dates without midnight."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "是" if value else "否"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return one_line(str(value))


def header_depth(rows: Sequence[Sequence[str]], spans: Sequence[Span]) -> int:
    """How many leading rows form the header (see the module docstring); at least 1."""
    depth = 1
    limit = min(MAX_HEADER_ROWS, max(len(rows) - 1, 1))
    changed = True
    while changed and depth < limit:
        changed = False
        for top, left, bottom, right in spans:
            if top >= depth:
                continue
            grown = depth
            if bottom >= depth:  # a header cell merged down into the next rows
                grown = bottom + 1
            elif top == depth - 1 and right > left:  # a merged group over sub-headers
                grown = depth + 1
            grown = min(grown, limit)
            if grown > depth:
                depth, changed = grown, True
    return depth


def fold_header(header_rows: Sequence[Sequence[str]]) -> list[str]:
    """One header row from several: per column, the distinct non-empty values in order."""
    width = max((len(r) for r in header_rows), default=0)
    folded: list[str] = []
    for col in range(width):
        parts: list[str] = []
        for row in header_rows:
            value = row[col] if col < len(row) else ""
            if value and value not in parts:
                parts.append(value)
        folded.append(HEADER_JOINER.join(parts))
    return folded


def _fill_merged(grid: list[list[str]], spans: Sequence[Span]) -> None:
    for top, left, bottom, right in spans:
        value = grid[top][left]
        for r in range(top, bottom + 1):
            for c in range(left, right + 1):
                grid[r][c] = value


def sheet_table(grid: list[list[str]], spans: Sequence[Span]) -> str:
    """A sheet's cells (already text) as one GFM table: merged cells filled, header folded,
    empty rows and trailing empty columns dropped; a first row with one value across the whole
    width (a banner title) becomes the line above the table (its caption)."""
    _fill_merged(grid, spans)
    first = next((i for i, row in enumerate(grid) if any(row)), None)
    if first is None:
        return ""
    rows = grid[first:]
    width = max(max((c for c, v in enumerate(row) if v), default=-1) for row in rows) + 1
    rows = [row[:width] for row in rows]
    caption = ""
    if width > 1 and len(rows) > 2 and len(set(rows[0])) == 1:  # a banner over the whole table
        caption, first, rows = rows[0][0], first + 1, rows[1:]
    rebased = [(max(t - first, 0), lft, b - first, rgt) for t, lft, b, rgt in spans if b >= first]
    depth = header_depth(rows, rebased)
    body = [row for row in rows[depth:] if any(row)]
    table = gfm_table([fold_header(rows[:depth]), *body])
    return f"{escape_block_start(caption)}\n\n{table}" if caption and table else table


def render_sheets(sheets: Sequence[tuple[str, str]]) -> str:
    """``## name`` + table for every (name, table) with a table; blocks separated by a blank line.
    A banner caption that only repeats the sheet's name is dropped (the heading says it)."""
    parts = [
        f"## {one_line(name) or '表格'}\n\n{_without_echo(one_line(name), table)}"
        for name, table in sheets
        if table
    ]
    return "\n\n".join(parts)


def _without_echo(name: str, table: str) -> str:
    caption, sep, rest = table.partition("\n\n")
    if sep and not caption.startswith("|") and _plain(caption) == _plain(name):
        return rest
    return table


def _plain(text: str) -> str:
    return "".join(text.replace("\\", "").split()).casefold()


def read_xlsx(data: bytes, name: str = "", *, stream: bool | None = None) -> ParsedFile:
    """Read an Excel workbook (``.xlsx``/``.xlsm``): every sheet a table under its name.

    A workbook without merged cells is streamed (openpyxl ``read_only``: rows rendered as they
    are read, sheets_stream.py); one with merged cells is loaded whole, as only a loaded sheet
    knows its merged ranges. Both give the same text. ``stream``: force one way (tests)."""
    require_zip_package(data, ".xlsx", "a legacy .xls file; rename it .xls")
    try:
        from openpyxl import load_workbook

        if stream is None:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                stream = not has_merged_cells(archive)
        book = load_workbook(io.BytesIO(data), data_only=True, read_only=stream)
    except MemoryError:  # over the parse's memory limit: not a broken file
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile/openpyxl raise many types
        raise ReaderError(f"not a valid .xlsx file ({type(exc).__name__}: {exc})") from exc
    sheets: list[tuple[str, str]] = []
    try:
        for sheet in book.worksheets:
            table = _streamed_table(sheet) if stream else sheet_table(*_sheet_cells(sheet))
            sheets.append((sheet.title, table))
        title = _core_title(book)
    except (MemoryError, ReaderError):
        raise
    except Exception as exc:  # noqa: BLE001 - a read-only sheet is parsed while it is read
        raise ReaderError(f"not a valid .xlsx file ({type(exc).__name__}: {exc})") from exc
    finally:
        if stream:
            book.close()
    return _workbook(sheets, "xlsx", title)


def _streamed_table(sheet: Any) -> str:
    """A read-only sheet's table, rendered row by row as it is read (no merged cells)."""
    sheet.reset_dimensions()  # its <dimension> may claim far more (or less) than it holds

    def rows() -> Iterator[tuple[Any, ...]]:  # expat on the sheet's XML: openpyxl's values
        return sheet_rows(sheet) if can_read(sheet) else sheet.iter_rows(values_only=True)

    table = StreamedTable(MAX_DENSE_CELLS)
    for row in rows():
        table.add([cell_text(v) for v in row])
    text = table.table()
    if text is None:  # sparse, an empty column between filled ones: the full load's grid
        filled: dict[tuple[int, int], str] = {}
        for r, row in enumerate(rows(), start=1):
            for c, value in enumerate(row, start=1):
                if t := cell_text(value):
                    filled[(r, c)] = t
        text = sheet_table(*_sparse_grid(filled, []))
    return text


def read_xls(data: bytes, name: str = "") -> ParsedFile:
    """Read a legacy Excel 97–2003 workbook (``.xls``, BIFF in an OLE container) with xlrd:
    every sheet a table under its name, exactly as :func:`read_xlsx` renders one."""
    kind = sniff_binary(data)
    if kind and not kind.startswith("legacy Office"):
        if kind.startswith("ZIP"):
            raise ReaderError("not a valid .xls file (looks like an .xlsx file; rename it .xlsx)")
        raise ReaderError(f"not a valid .xls file (looks like {kind})")
    try:
        import xlrd

        # formatting_info: merged ranges are only read with it
        book = xlrd.open_workbook(file_contents=data, formatting_info=True, on_demand=False)
    except Exception as exc:  # noqa: BLE001 - xlrd raises XLRDError, CompDocError, struct errors
        raise ReaderError(f"not a valid .xls file ({type(exc).__name__}: {exc})") from exc
    sheets: list[tuple[str, str]] = []
    for sheet in book.sheets():
        sheets.append((sheet.name, sheet_table(*_xls_sheet_cells(sheet, book.datemode))))
    return _workbook(sheets, "xls", None)


def _workbook(sheets: list[tuple[str, str]], doc_type: str, title: str | None) -> ParsedFile:
    """The parsed workbook: every (sheet name, table) rendered, refused when all are empty."""
    text = render_sheets(sheets)
    if not text:
        raise ReaderError("empty workbook (no cell text in any sheet)")
    return ParsedFile(
        text=text,
        doc_type=doc_type,
        fmt="markdown",
        title=title,
        encoding=None,
        metadata={"sheets": [s for s, table in sheets if table]},
    )


def _xls_cell_text(cell: Any, datemode: int) -> str:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return cell_text(xlrd.xldate_as_datetime(cell.value, datemode))
        except (ValueError, OverflowError, xlrd.xldate.XLDateError):
            return cell_text(cell.value)
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return cell_text(bool(cell.value))
    if cell.ctype in (xlrd.XL_CELL_ERROR, xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return ""
    return cell_text(cell.value)


def _xls_sheet_cells(sheet: Any, datemode: int) -> tuple[list[list[str]], list[Span]]:
    width = sheet.ncols
    grid = [[_xls_cell_text(cell, datemode) for cell in sheet.row(r)] for r in range(sheet.nrows)]
    grid = [row + [""] * (width - len(row)) for row in grid]
    spans: list[Span] = []
    # xlrd: (first_row, last_row + 1, first_col, last_col + 1)
    for rlo, rhi, clo, chi in sheet.merged_cells:
        if rlo < len(grid) and clo < width:
            spans.append((rlo, clo, min(rhi - 1, len(grid) - 1), min(chi - 1, width - 1)))
    return grid, spans


# a sheet whose used range spans more cells than this is read from the cells that exist (a
# 1.6 KB file with a cell at A1 and one at XFD1048576 spans 17 billion)
MAX_DENSE_CELLS = 4_000_000


def _sheet_cells(sheet: Any) -> tuple[list[list[str]], list[Span]]:
    cells = getattr(sheet, "_cells", None)
    if isinstance(cells, dict) and sheet.max_row * sheet.max_column > MAX_DENSE_CELLS:
        return _sparse_cells(sheet, cells)
    grid = [[cell_text(v) for v in row] for row in sheet.iter_rows(values_only=True)]
    width = max((len(r) for r in grid), default=0)
    grid = [row + [""] * (width - len(row)) for row in grid]
    spans: list[Span] = []
    for merged in sheet.merged_cells.ranges:
        top, left, bottom, right = (
            merged.min_row - 1,
            merged.min_col - 1,
            merged.max_row - 1,
            merged.max_col - 1,
        )
        if top < len(grid) and left < width:
            spans.append((top, left, min(bottom, len(grid) - 1), min(right, width - 1)))
    return grid, spans


def _sparse_cells(
    sheet: Any, cells: dict[tuple[int, int], Any]
) -> tuple[list[list[str]], list[Span]]:
    """The grid of the rows and columns that hold a value (in order; the empty ones between
    them dropped), and the merged ranges mapped onto it."""
    filled = {(r, c): cell_text(cell.value) for (r, c), cell in cells.items()}
    filled = {key: text for key, text in filled.items() if text}
    return _sparse_grid(filled, sheet.merged_cells.ranges)


def _sparse_grid(
    filled: dict[tuple[int, int], str], merged_ranges: Any
) -> tuple[list[list[str]], list[Span]]:
    """``_sparse_cells``'s grid from the texts by 1-based (row, column) and merged ranges."""
    from bisect import bisect_left, bisect_right

    rows = sorted({r for r, _ in filled})
    cols = sorted({c for _, c in filled})
    row_at = {r: i for i, r in enumerate(rows)}
    col_at = {c: i for i, c in enumerate(cols)}
    grid = [[""] * len(cols) for _ in rows]
    for (r, c), text in filled.items():
        grid[row_at[r]][col_at[c]] = text
    spans: list[Span] = []
    for merged in merged_ranges:
        top, bottom = bisect_left(rows, merged.min_row), bisect_right(rows, merged.max_row) - 1
        left, right = bisect_left(cols, merged.min_col), bisect_right(cols, merged.max_col) - 1
        if top <= bottom and left <= right:
            spans.append((top, left, bottom, right))
    return grid, spans


def _core_title(book: Any) -> str | None:
    try:
        title = book.properties.title
    except Exception:  # noqa: BLE001 - unreadable properties: no title
        return None
    cleaned = one_line(title) if isinstance(title, str) else ""
    return cleaned or None


def read_csv(data: bytes, name: str = "") -> ParsedFile:
    """Read a CSV file (UTF-8/GBK/GB18030/UTF-16, detected as for text): one table under the
    file's name. The delimiter (``,`` ``;`` tab ``|``) is sniffed."""
    raw, encoding = decode_text(data, ".csv")
    text = normalize_newlines(raw).lstrip("\ufeff")
    if not text.strip():
        raise ReaderError("empty file")
    try:
        dialect: Any = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        grid = [[one_line(c) for c in row] for row in csv.reader(io.StringIO(text), dialect)]
    except csv.Error as exc:
        raise ReaderError(f"not a valid .csv file ({exc})") from exc
    width = max((len(r) for r in grid), default=0)
    grid = [row + [""] * (width - len(row)) for row in grid]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    rendered = render_sheets([(stem or "表格", sheet_table(grid, []))])
    if not rendered:
        raise ReaderError("empty file")
    return ParsedFile(
        text=rendered, doc_type="csv", fmt="markdown", title=None, encoding=encoding, metadata={}
    )
