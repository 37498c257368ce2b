"""A PDF page's characters (with boxes, font size and weight) and ruling segments, via PDFium.

Coordinates are in points with the origin at the top left of the page as displayed (``/Rotate``
and a media box that does not start at 0 are applied), so ``top < bottom``.

* Characters: PDFium's own (generated) spaces and line breaks are dropped (a space, drawn or
  generated, marks the next character, ``space``), as are glyphs that are not upright on the displayed page (watermarks, vertical margin notes); the box is PDFium's
  *loose* box (font ascent to descent), the same for every glyph of a line.
* Segments: the horizontal and vertical straight pieces of stroked paths (lines, rectangles) and
  thin filled rectangles (the borders Chromium and many converters draw as filled rectangles);
  large filled rectangles (cell shading) give their four edges. Form XObjects are entered, their
  matrices applied. Curves are ignored.

Bounded: a page keeps at most ``max_chars`` characters and ``max_segments`` segments; past that
the page is marked ``dense`` / ``too_many_segments`` for the reader to degrade (and say so).
"""

from __future__ import annotations

import ctypes
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as raw

__all__ = ["PDFIUM_LOCK", "PageContent", "PdfChar", "Segment", "read_page"]

#: PDFium is not thread-safe: every call on a document goes under this lock.
PDFIUM_LOCK = threading.Lock()

_BOLD_NAME = ("bold", "black", "heavy", "semibold", "demibold", "demi")
_FILL_STROKE = 2  # FPDF_TEXTRENDERMODE_FILL_STROKE: Word's "fake bold" of a CJK font
_THIN = 3.0  # a filled rectangle thinner than this (pt) is a ruling line
_AXIS_TOL = 1.0  # a segment whose ends differ by less than this in x (y) is vertical (horizontal)
_MAX_FORM_DEPTH = 4


@dataclass(slots=True)
class PdfChar:
    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float
    bold: bool
    space: bool = False  # PDFium saw a word space before it (a gap, no space glyph)


@dataclass(slots=True)
class Segment:
    """An axis-aligned ruling segment: horizontal when ``top == bottom``."""

    x0: float
    top: float
    x1: float
    bottom: float

    @property
    def horizontal(self) -> bool:
        return self.top == self.bottom


@dataclass
class PageContent:
    number: int  # 1-based
    width: float
    height: float
    chars: list[PdfChar] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    dense: bool = False  # more characters than the layout analysis takes
    too_many_segments: bool = False  # more ruling segments than table finding takes
    rotated_chars: int = 0  # glyphs dropped as not upright
    plain: str = ""  # a dense page's text in content order (PDFium's), read without layout


class _Frame:
    """Maps PDFium page space (y up) to the displayed page's top-left space."""

    def __init__(self, page: Any) -> None:
        left, bottom, right, top = page.get_mediabox()
        self.left, self.bottom, self.right, self.top = left, bottom, right, top
        self.rotation = page.get_rotation() % 360
        w, h = right - left, top - bottom
        self.width, self.height = (h, w) if self.rotation in (90, 270) else (w, h)

    def point(self, x: float, y: float) -> tuple[float, float]:
        x, y = x - self.left, y - self.bottom
        w, h = self.right - self.left, self.top - self.bottom
        if self.rotation == 90:
            return y, x
        if self.rotation == 180:
            return w - x, y
        if self.rotation == 270:
            return h - y, w - x
        return x, h - y

    def box(self, x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
        ax, ay = self.point(x0, y0)
        bx, by = self.point(x1, y1)
        return min(ax, bx), min(ay, by), max(ax, bx), max(ay, by)


def _font_style(textpage: Any, index: int, obj: Any, buf: Any, flags: Any) -> tuple[float, bool]:
    size = float(raw.FPDFText_GetFontSize(textpage, index))
    matrix = raw.FS_MATRIX()  # the size as drawn: Chromium, for one, scales px fonts by 0.75
    if raw.FPDFText_GetMatrix(textpage, index, matrix):
        scale = math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c))
        if 0.01 < scale < 100:
            size *= scale
    raw.FPDFText_GetFontInfo(textpage, index, buf, len(buf), ctypes.byref(flags))
    name = bytes(buf.value).decode("latin-1", "replace").lower()
    weight = raw.FPDFText_GetFontWeight(textpage, index)
    bold = (
        weight >= 600
        or any(part in name for part in _BOLD_NAME)
        or raw.FPDFTextObj_GetTextRenderMode(obj) == _FILL_STROKE
    )
    return size, bold


def _upright(textpage: Any, index: int, rotation: int) -> bool:
    angle = raw.FPDFText_GetCharAngle(textpage, index)
    if angle < 0:  # unknown
        return True
    degrees = (math.degrees(angle) + rotation) % 360
    return min(degrees, 360 - degrees) < 5


def _codes(textpage: Any, count: int) -> list[int] | None:
    """Every character's code point from one call (None when UTF-16 surrogates would shift the
    indexes: then they are read one by one)."""
    if count <= 0:
        return []
    buffer = ctypes.create_string_buffer((count + 1) * 2)
    written = raw.FPDFText_GetText(
        textpage, 0, count, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort))
    )
    units = buffer.raw[: max(written - 1, 0) * 2]
    if len(units) != count * 2:
        return None
    codes = list(memoryview(units).cast("H"))
    return None if any(0xD800 <= c <= 0xDFFF for c in codes) else codes


def _read_chars(page_text: Any, frame: _Frame, content: PageContent, max_chars: int) -> None:
    textpage = page_text.raw  # the handle itself: the helper converts on every call otherwise
    count = raw.FPDFText_CountChars(textpage)
    codes = _codes(textpage, count)
    rect = raw.FS_RECTF()
    buf = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    styles: dict[bytes, tuple[float, bool, bool]] = {}
    chars = content.chars
    upright = frame.rotation == 0
    space = False
    left, top_edge = frame.left, frame.top
    for index in range(max(count, 0)):
        obj = raw.FPDFText_GetTextObject(textpage, index)
        code = codes[index] if codes is not None else 0xFFFE
        if code == 0xFFFE:  # GetText's stand-in (for the line-end hyphen mark, among others)
            code = raw.FPDFText_GetUnicode(textpage, index)
        if not obj:  # generated by PDFium: a space it inferred from a gap, a line break
            space = space or code == 0x20
            continue
        key = bytes(obj)  # the pointer's value: chars of one text object share a style
        if code == 2:  # PDFium's mark for a hyphen that ends a line
            code = 0x2D
        if code in (0, 0xFFFE, 0xFFFF) or 0xD800 <= code <= 0xDFFF:
            continue
        style = styles.get(key)
        if style is None:
            size, bold = _font_style(textpage, index, obj, buf, flags)
            style = styles[key] = (size, bold, _upright(textpage, index, frame.rotation))
        if not style[2]:
            content.rotated_chars += 1
            continue
        if len(chars) >= max_chars:
            content.dense = True
            return
        text = chr(code)
        if text in "\r\n\t":
            continue
        if text == " ":  # where a space glyph's box lies varies by producer: mark the next char
            space = True
            continue
        raw.FPDFText_GetLooseCharBox(textpage, index, rect)
        if upright:
            x0, x1 = rect.left - left, rect.right - left
            top, bottom = top_edge - rect.top, top_edge - rect.bottom
        else:
            x0, top, x1, bottom = frame.box(rect.left, rect.bottom, rect.right, rect.top)
        chars.append(PdfChar(text, x0, top, x1, bottom, style[0] or bottom - top, style[1], space))
        space = False


def _matrix(obj: Any) -> tuple[float, float, float, float, float, float]:
    m = raw.FS_MATRIX()
    if not raw.FPDFPageObj_GetMatrix(obj, m):
        return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _compose(inner: tuple[float, ...], outer: tuple[float, ...]) -> tuple[float, ...]:
    a, b, c, d, e, f = inner
    A, B, C, D, E, F = outer  # noqa: N806 - the usual matrix letters
    return (
        a * A + b * C,
        a * B + b * D,
        c * A + d * C,
        c * B + d * D,
        e * A + f * C + E,
        e * B + f * D + F,
    )


class _Paths:
    """Collects ruling segments from a page's path objects (see the module docstring)."""

    def __init__(self, frame: _Frame, content: PageContent, max_segments: int) -> None:
        self.frame = frame
        self.content = content
        self.max_segments = max_segments
        self.x = ctypes.c_float()
        self.y = ctypes.c_float()
        self.mode = ctypes.c_int()
        self.stroke = ctypes.c_int()

    def add(self, x0: float, y0: float, x1: float, y1: float) -> None:
        if len(self.content.segments) >= self.max_segments:
            self.content.too_many_segments = True
            return
        ax, ay = self.frame.point(x0, y0)
        bx, by = self.frame.point(x1, y1)
        if abs(ay - by) <= _AXIS_TOL and abs(ax - bx) > _AXIS_TOL:
            y = (ay + by) / 2
            self.content.segments.append(Segment(min(ax, bx), y, max(ax, bx), y))
        elif abs(ax - bx) <= _AXIS_TOL and abs(ay - by) > _AXIS_TOL:
            x = (ax + bx) / 2
            self.content.segments.append(Segment(x, min(ay, by), x, max(ay, by)))

    def walk(self, objects: Any, count: int, matrix: tuple[float, ...], depth: int) -> None:
        for i in range(count):
            if self.content.too_many_segments:
                return
            obj = objects(i)
            kind = raw.FPDFPageObj_GetType(obj)
            if kind == raw.FPDF_PAGEOBJ_PATH:
                self.path(obj, _compose(_matrix(obj), matrix))
            elif kind == raw.FPDF_PAGEOBJ_FORM and depth < _MAX_FORM_DEPTH:
                inner = _compose(_matrix(obj), matrix)
                self.walk(
                    lambda k, o=obj: raw.FPDFFormObj_GetObject(o, k),
                    raw.FPDFFormObj_CountObjects(obj),
                    inner,
                    depth + 1,
                )

    def path(self, obj: Any, m: tuple[float, ...]) -> None:
        raw.FPDFPath_GetDrawMode(obj, self.mode, self.stroke)
        stroked, filled = bool(self.stroke.value), self.mode.value != 0
        if not (stroked or filled):
            return
        a, b, c, d, e, f = m
        points: list[list[tuple[float, float]]] = []
        count = raw.FPDFPath_CountSegments(obj)
        if count > self.max_segments:
            self.content.too_many_segments = True
            return
        for i in range(count):
            seg = raw.FPDFPath_GetPathSegment(obj, i)
            raw.FPDFPathSegment_GetPoint(seg, self.x, self.y)
            x, y = self.x.value, self.y.value
            point = (a * x + c * y + e, b * x + d * y + f)
            kind = raw.FPDFPathSegment_GetType(seg)
            if kind == raw.FPDF_SEGMENT_MOVETO or not points:
                points.append([point])
            elif kind == raw.FPDF_SEGMENT_LINETO:
                points[-1].append(point)
            else:  # a curve: this subpath is no ruling
                points[-1] = []
                points.append([point])
            if raw.FPDFPathSegment_GetClose(seg) and points[-1]:
                points[-1].append(points[-1][0])
        for sub in points:
            if len(sub) < 2:
                continue
            if stroked:
                for (x0, y0), (x1, y1) in zip(sub, sub[1:], strict=False):
                    self.add(x0, y0, x1, y1)
            else:
                self.filled(sub)

    def filled(self, sub: list[tuple[float, float]]) -> None:
        xs = [p[0] for p in sub]
        ys = [p[1] for p in sub]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        if len(sub) > 6:  # not a rectangle
            return
        if y1 - y0 <= _THIN and x1 - x0 > _THIN:
            self.add(x0, (y0 + y1) / 2, x1, (y0 + y1) / 2)
        elif x1 - x0 <= _THIN and y1 - y0 > _THIN:
            self.add((x0 + x1) / 2, y0, (x0 + x1) / 2, y1)
        elif x1 - x0 > _THIN and y1 - y0 > _THIN:
            for sx0, sy0, sx1, sy1 in ((x0, y0, x1, y0), (x0, y1, x1, y1)):
                self.add(sx0, sy0, sx1, sy1)
            for sx0, sy0, sx1, sy1 in ((x0, y0, x0, y1), (x1, y0, x1, y1)):
                self.add(sx0, sy0, sx1, sy1)


def read_page(
    document: pdfium.PdfDocument, index: int, *, max_chars: int, max_segments: int
) -> PageContent:
    """The characters and ruling segments of page ``index`` (0-based); call under
    :data:`PDFIUM_LOCK`."""
    page = document[index]
    try:
        frame = _Frame(page)
        content = PageContent(index + 1, frame.width, frame.height)
        textpage = page.get_textpage()
        try:
            _read_chars(textpage, frame, content, max_chars)
            if content.dense:
                content.chars = []
                content.plain = textpage.get_text_range()
                return content
        finally:
            textpage.close()
        paths = _Paths(frame, content, max_segments)
        paths.walk(
            lambda k: raw.FPDFPage_GetObject(page, k),
            raw.FPDFPage_CountObjects(page),
            (1.0, 0.0, 0.0, 1.0, 0.0, 0.0),
            0,
        )
        return content
    finally:
        page.close()
