"""Typeset test PDFs with reportlab: wrapped Chinese paragraphs, headings, ruled tables that
break over pages (the header row repeated, as Word repeats it), a running header and a
"第 N 页" footer on every page, one or two columns.

reportlab's built-in ``STSong-Light`` CID font needs no font file; text is wrapped by measured
width, so Chinese lines break mid-word exactly as a word processor breaks them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

PAGE_W, PAGE_H = 595.0, 842.0
MARGIN = 72.0
CJK = "STSong-Light"


def _register() -> None:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont

    if CJK not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(UnicodeCIDFont(CJK))


def wrap(text: str, width: float, font: str, size: float) -> list[str]:
    """Break ``text`` into lines no wider than ``width`` (character by character, Latin words
    kept whole when they fit)."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    lines: list[str] = []
    line = ""
    for ch in text:
        if stringWidth(line + ch, font, size) > width and line:
            if ch != " " and " " in line and line[-1] != " " and ch.isascii() and ch.isalpha():
                head, _, tail = line.rpartition(" ")
                if head and tail.isascii():
                    lines.append(head)
                    line = tail + ch
                    continue
            lines.append(line.rstrip())
            line = ch.lstrip()
        else:
            line += ch
    if line:
        lines.append(line)
    return lines


@dataclass
class Doc:
    """A typesetter: call :meth:`heading`, :meth:`para`, :meth:`table`, then :meth:`pdf`."""

    header: str = ""
    header_right: str = ""  # printed on the header's baseline, flush right
    header_below: str = ""  # a second header line (a tab that pushed the right part down)
    footer: bool = True
    columns: int = 1
    title: str | None = None  # the PDF's metadata title
    size: float = 10.5
    leading: float = 16.0
    _ops: list[tuple[str, object]] = field(default_factory=list)

    def heading(self, text: str, size: float = 15.0) -> Doc:
        self._ops.append(("heading", (text, size)))
        return self

    def para(self, text: str, indent: bool = True) -> Doc:
        self._ops.append(("para", (text, indent)))
        return self

    def table(
        self, rows: list[list[str]], widths: list[float], header_rows: int = 1, ruled: bool = True
    ) -> Doc:
        self._ops.append(("table", (rows, widths, header_rows, ruled)))
        return self

    def pdf(self) -> bytes:
        from reportlab.pdfgen import canvas

        _register()
        buffer = io.BytesIO()
        self.c = canvas.Canvas(buffer, pagesize=(PAGE_W, PAGE_H))
        if self.title:
            self.c.setTitle(self.title)
        self.page = 0
        self.col = 0
        self._new_page()
        for kind, args in self._ops:
            getattr(self, "_" + kind)(*args)  # type: ignore[misc]
        self._finish_page()
        self.c.save()
        return buffer.getvalue()

    # -- layout ------------------------------------------------------------------------------
    @property
    def _col_w(self) -> float:
        gutter = 24.0
        return (PAGE_W - 2 * MARGIN - gutter * (self.columns - 1)) / self.columns

    @property
    def _x(self) -> float:
        return MARGIN + self.col * (self._col_w + 24.0)

    def _new_page(self) -> None:
        self.page += 1
        self.y = PAGE_H - MARGIN
        if self.header:
            self.c.setFont(CJK, 9)
            self.c.drawString(MARGIN, PAGE_H - 40, self.header)
            if self.header_right:
                self.c.drawRightString(PAGE_W - MARGIN, PAGE_H - 40, self.header_right)
            if self.header_below:
                self.c.drawString(MARGIN, PAGE_H - 51, self.header_below)
            self.c.line(MARGIN, PAGE_H - 46, PAGE_W - MARGIN, PAGE_H - 46)

    def _finish_page(self) -> None:
        if self.footer:
            self.c.setFont(CJK, 9)
            self.c.drawCentredString(PAGE_W / 2, 36, f"第 {self.page} 页")
        self.c.showPage()

    def _need(self, height: float) -> None:
        if self.y - height >= MARGIN:
            return
        if self.col + 1 < self.columns:
            self.col += 1
            self.y = self.top_of_columns
            return
        self._finish_page()
        self._new_page()
        self.col = 0
        self.top_of_columns = self.y

    top_of_columns: float = PAGE_H - MARGIN

    def _heading(self, text: str, size: float) -> None:
        self._need(size * 2.2)
        self.y -= size * 1.6
        self.c.setFont(CJK, size)
        self.c.drawString(self._x, self.y, text)
        self.y -= size * 0.6
        self.top_of_columns = self.y

    def _para(self, text: str, indent: bool) -> None:
        first = 2 * self.size if indent else 0.0
        lines = wrap(text, self._col_w - first, CJK, self.size)
        # later lines use the full width: re-wrap the rest
        if len(lines) > 1:
            rest = text[len(lines[0]) :].lstrip()
            lines = [lines[0], *wrap(rest, self._col_w, CJK, self.size)]
        self.y -= 4
        for k, line in enumerate(lines):
            self._need(self.leading)
            self.y -= self.leading
            self.c.setFont(CJK, self.size)
            self.c.drawString(self._x + (first if k == 0 else 0), self.y + 4, line)

    def _table(
        self, rows: list[list[str]], widths: list[float], header_rows: int, ruled: bool
    ) -> None:
        size, lead, pad = 9.0, 12.0, 3.0
        self.y -= 8
        header = rows[:header_rows]

        def height(row: list[str]) -> float:
            return (
                max(
                    len(wrap(c, w - 2 * pad, CJK, size)) or 1
                    for c, w in zip(row, widths, strict=False)
                )
                * lead
                + 2 * pad
            )

        def draw(row: list[str]) -> None:
            h = height(row)
            x = self._x
            top = self.y
            self.c.setFont(CJK, size)
            for cell, w in zip(row, widths, strict=False):
                for k, line in enumerate(wrap(cell, w - 2 * pad, CJK, size)):
                    self.c.drawString(x + pad, top - pad - lead * (k + 1) + 3, line)
                if ruled:
                    self.c.rect(x, top - h, w, h)
                x += w
            self.y -= h

        for row in header:
            draw(row)
        for row in rows[header_rows:]:
            if self.y - height(row) < MARGIN:
                self._need(10_000)  # next page
                for h in header:
                    draw(h)
            draw(row)
