"""Two-column pages in reading order.

A vertical gutter crossed by (almost) no line, with lines on both sides that stand side by side,
makes a two-column section: its left lines are read before its right ones. The lines on each side
must be flowing text (their median width at least 60 % of the column's), not a form of short
labels and values; a table counts as the column it stands in. Lines crossing the gutter (a title,
a full-width table) are read in place, between the sections above and below them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from rag_app.readers.pdf_layout import Line

__all__ = ["order_lines"]


def _gutter(lines: Sequence[Line]) -> tuple[float, float] | None:
    """The x-interval of a two-column gutter, or None (see the module docstring). Tables count
    as the column they stand in."""
    if len(lines) < 2:
        return None
    left = min(ln.x0 for ln in lines)
    right = max(ln.x1 for ln in lines)
    width = int(right - left) + 1
    if not 100 <= width <= 20_000:  # a damaged file's coordinates: no column analysis
        return None
    coverage = [0] * (width + 1)
    for ln in lines:
        coverage[max(int(ln.x0 - left), 0)] += 1
        coverage[min(int(ln.x1 - left) + 1, width)] -= 1
    running = 0
    for i in range(width + 1):
        running += coverage[i]
        coverage[i] = running
    lo, hi = int(width * 0.3), int(width * 0.7)
    allowed = max(1, len(lines) // 10)
    best: tuple[int, int] | None = None
    start = None
    for i in range(lo, hi + 1):
        if coverage[i] <= allowed:
            start = i if start is None else start
            if best is None or i - start > best[1] - best[0]:
                best = (start, i)
        else:
            start = None
    if best is None or best[1] - best[0] < 6:
        return None
    # the gutter ends where the right column starts and begins where the left one ends (a lone
    # table or a crossing title may cover part of the run)
    g1 = min((ln.x0 for ln in lines if ln.x0 >= left + best[0]), default=right)
    g0 = max((ln.x1 for ln in lines if ln.x1 <= g1), default=left)
    if g1 - g0 < 6:
        return None
    lefts = [ln for ln in lines if ln.x1 <= g0 + 1]
    rights = [ln for ln in lines if ln.x0 >= g1 - 1]
    for side, edge in ((lefts, g0 - left), (rights, right - g1)):
        text = [ln for ln in side if ln.table is None]
        if len(text) < 4 and not any(ln.table is not None for ln in side):
            return None
        # flowing text, not a form of short labels and values
        narrow = bool(text) and statistics.median(ln.x1 - ln.x0 for ln in text) < 0.6 * edge
        if narrow and (len(text) >= 4 or not any(ln.table is not None for ln in side)):
            return None
    side_by_side = sum(
        1 for a in lefts[:200] if any(b.top < a.bottom and a.top < b.bottom for b in rights[:200])
    )
    tables = any(ln.table is not None for ln in lefts) or any(ln.table is not None for ln in rights)
    return (g0, g1) if side_by_side >= (1 if tables else 3) else None


def order_lines(lines: list[Line]) -> list[Line]:
    """The page's lines in reading order; sets each line's ``column``."""
    lines = sorted(lines, key=lambda ln: (ln.top, ln.x0))
    gutter = _gutter(lines)
    if gutter is None:
        for ln in lines:
            ln.column = 0
        return lines
    g0, g1 = gutter
    out: list[Line] = []
    section: list[Line] = []

    def flush() -> None:
        out.extend(sorted((ln for ln in section if ln.column == 1), key=lambda ln: ln.top))
        out.extend(sorted((ln for ln in section if ln.column == 2), key=lambda ln: ln.top))
        section.clear()

    for ln in lines:
        if ln.x0 < g0 and ln.x1 > g1:
            flush()
            ln.column = 0
            out.append(ln)
        else:
            ln.column = 1 if ln.x1 <= g1 else 2
            section.append(ln)
    flush()
    return out
