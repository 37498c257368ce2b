"""A worksheet's rows read straight from its XML with expat: the values openpyxl's read-only
sheet gives (``iter_rows(values_only=True)`` after ``reset_dimensions()``), about five times
faster, as no element objects are built (openpyxl's parser builds one per cell, then searches
it: 1M rows took it over a minute on 2 cores).

Used by the streaming side of the .xlsx reader (sheets_stream.py) on a read-only workbook,
whose shared strings, date styles and epoch openpyxl has read already; values are converted as
openpyxl's ``WorkSheetParser.parse_cell`` converts them with ``data_only`` (numbers to int or
float, date-styled numbers to dates, shared and inline strings, booleans, ISO dates, errors as
their text), and rows are laid out as its ``_cells_by_row`` lays them out (a missing row empty,
a row as long as its last cell, a row out of order skipped). Entity declarations are refused
(as defusedxml, openpyxl's parser here, refuses them).
"""

from __future__ import annotations

import pyexpat
from collections.abc import Iterator
from typing import Any

from openpyxl.utils.cell import column_index_from_string
from openpyxl.utils.datetime import from_excel, from_ISO8601

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_SEP = "\x01"
ROW, VALUE, INLINE, TEXT, RUN = (f"{MAIN}{_SEP}{n}" for n in ("row", "v", "is", "t", "r"))
_READ = 1024 * 1024
_DIGITS = "0123456789"
_NONE, _DONE = -10, -20  # no such element open; the cell's <is> was read


class SheetXMLError(ValueError):
    """The worksheet's XML is not what a worksheet holds (or declares entities)."""


def _cast_number(value: str) -> int | float:
    """openpyxl's: an int unless the text has a point or an exponent."""
    if "." in value or "E" in value or "e" in value:
        return float(value)
    return int(value)


class _Rows:
    """expat handlers collecting each finished row's values (see the module docstring)."""

    def __init__(self, shared: list[Any], dates: Any, timedeltas: Any, epoch: Any) -> None:
        self.shared, self.dates, self.timedeltas, self.epoch = shared, dates, timedeltas, epoch
        self.out: list[tuple[Any, ...]] = []
        self.depth = 0
        self.counter = 1  # the next row to give (missing rows before it are given empty)
        self.row_index = 0
        # depths of the open row, cell, its <is> and a run of it (_NONE: none open; an
        # element at depth + 1 is a child: never for _NONE)
        self.row_depth = _NONE
        self.col = 0
        self.cells: list[tuple[int, Any]] = []
        self.cell_depth = _NONE
        self.cell_type = "n"
        self.cell_style = 0
        self.value: str | None = None
        self.seen_value = False
        self.inline = _NONE  # the cell's (first) <is>; _DONE once read
        self.plain: str | None = None
        self.runs: list[str] = []
        self.run_depth = _NONE
        self.text: list[str] | None = None  # collecting an element's text
        self.text_depth = _NONE
        self.text_kind = ""

    def start(self, name: str, attrs: dict[str, str]) -> None:
        depth = self.depth = self.depth + 1
        if depth == self.row_depth + 1:  # a cell: any child of a row
            ref = attrs.get("r")
            if ref:
                letters = ref.rstrip(_DIGITS)
                if not letters or len(letters) == len(ref):
                    raise SheetXMLError(f"invalid cell reference {ref!r}")
                self.col = column_index_from_string(letters)
            else:
                self.col += 1
            style = attrs.get("s")
            self.cell_type = attrs.get("t", "n")
            self.cell_style = int(style) if style else 0
            self.cell_depth = depth
            self.value, self.seen_value = None, False
            self.inline, self.plain, self.runs, self.run_depth = _NONE, None, [], _NONE
        elif depth == self.cell_depth + 1:  # a child of the cell
            if name == VALUE and not self.seen_value:
                self.text, self.text_depth, self.text_kind = [], depth, "v"
            elif name == INLINE and self.inline == _NONE:
                self.inline = depth
        elif depth == self.inline + 1:  # a child of <is>
            if name == TEXT:
                self.text, self.text_depth, self.text_kind = [], depth, "plain"
            elif name == RUN:
                self.run_depth = depth
        elif depth == self.run_depth + 1 and name == TEXT:
            self.text, self.text_depth, self.text_kind = [], depth, "run"
        elif name == ROW:
            self._begin_row(attrs)

    def _begin_row(self, attrs: dict[str, str]) -> None:
        r = attrs.get("r")
        if r is None:
            self.row_index += 1
        else:
            try:
                self.row_index = int(r)
            except ValueError:
                number = float(r)
                if not number.is_integer():
                    raise SheetXMLError(f"{r} is not a valid row number") from None
                self.row_index = int(number)
        self.row_depth, self.col, self.cells = self.depth, 0, []

    def data(self, text: str) -> None:
        if self.text is not None:
            self.text.append(text)

    def end(self, name: str) -> None:
        depth = self.depth
        self.depth -= 1
        if self.text is not None and depth == self.text_depth:
            text = "".join(self.text) if self.text else None
            if self.text_kind == "v":
                self.value, self.seen_value = text, True
            elif self.text_kind == "plain":
                self.plain = text
            elif text is not None:
                self.runs.append(text)
            self.text = None
        elif depth == self.cell_depth:
            self.cells.append((self.col, self._cell_value()))
            self.cell_depth = _NONE
        elif depth == self.row_depth:
            self._end_row()
            self.row_depth = _NONE
        elif depth == self.run_depth:
            self.run_depth = _NONE
        elif depth == self.inline:
            self.inline = _DONE

    def _cell_value(self) -> Any:
        kind = self.cell_type
        if kind == "inlineStr":
            if self.inline == _NONE:  # no <is>
                return None
            return "".join([self.plain or "", *self.runs])
        value: Any = self.value or None
        if value is None:
            return None
        if kind == "n":
            value = _cast_number(value)
            if self.cell_style in self.dates:
                try:
                    return from_excel(
                        value, self.epoch, timedelta=self.cell_style in self.timedeltas
                    )
                except (OverflowError, ValueError):
                    return "#VALUE!"
            return value
        if kind == "s":
            return self.shared[int(value)]
        if kind == "b":
            return bool(int(value))
        if kind == "d":
            return from_ISO8601(value)
        return value  # str (a formula's text), e (an error's text)

    def _end_row(self) -> None:
        index = self.row_index
        while self.counter < index:
            self.out.append(())
            self.counter += 1
        if self.counter > index:  # a row out of order: openpyxl skips it
            return
        self.counter += 1
        if not self.cells:
            self.out.append(())
            return
        width = self.cells[-1][0]
        row: list[Any] = [None] * width
        for col, value in self.cells:
            if col <= width:
                row[col - 1] = value
        self.out.append(tuple(row))


def _no_entities(*_: Any) -> None:
    raise SheetXMLError("the worksheet declares XML entities (refused)")


def _no_external(*_: Any) -> int:
    raise SheetXMLError("the worksheet refers to external XML entities (refused)")


def sheet_rows(sheet: Any) -> Iterator[tuple[Any, ...]]:
    """The rows of an openpyxl read-only worksheet, read from its XML (see the module
    docstring); a parsing failure raises :class:`SheetXMLError`."""
    book = sheet.parent
    rows = _Rows(sheet._shared_strings, book._date_formats, book._timedelta_formats, book.epoch)
    parser = pyexpat.ParserCreate(namespace_separator=_SEP)
    parser.buffer_text = True
    parser.buffer_size = 65536
    parser.StartElementHandler = rows.start
    parser.EndElementHandler = rows.end
    parser.CharacterDataHandler = rows.data
    parser.EntityDeclHandler = _no_entities
    parser.ExternalEntityRefHandler = _no_external
    parser.SetParamEntityParsing(pyexpat.XML_PARAM_ENTITY_PARSING_NEVER)
    with book._archive.open(sheet._worksheet_path) as part:
        try:
            while block := part.read(_READ):
                parser.Parse(block, False)
                if rows.out:
                    yield from rows.out
                    rows.out.clear()
            parser.Parse(b"", True)
        except pyexpat.ExpatError as exc:
            raise SheetXMLError(f"broken worksheet XML ({exc})") from None
    yield from rows.out


def can_read(sheet: Any) -> bool:
    """Whether the read-only sheet has what :func:`sheet_rows` reads (openpyxl's internals)."""
    book = getattr(sheet, "parent", None)
    return all(
        hasattr(obj, attr)
        for obj, attr in (
            (sheet, "_shared_strings"), (sheet, "_worksheet_path"), (book, "_archive"),
            (book, "_date_formats"), (book, "_timedelta_formats"), (book, "epoch"),
        )
    )  # fmt: skip
