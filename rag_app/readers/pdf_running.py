"""Running headers, footers and page numbers of a PDF, recognised by repetition across pages.

A line in the top or bottom band of a page (the outer ``BAND`` of its height, at most the
``EDGE_LINES`` lines nearest the edge) is *running* when a line of the same text, digits aside
("第 3 页" = "第 12 页"), sits in the same band on at least ``max(2, 40 %)`` of the pages, or
when it is a page number ("第 3 页", "- 3 -", "Page 3 of 10", "3/10", a bare number); a line
in another size than the repeated ones (a title under a header that repeats it) stays. Running
lines are dropped from the body; the most frequent running header and footer text (page numbers
aside) is kept as metadata.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag_app.readers.pdf_layout import Line, normalize

__all__ = ["BAND", "EDGE_LINES", "Running", "find_running", "is_page_number"]

BAND = 0.12
EDGE_LINES = 3
_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"^(?:第#页(?:[,，/]?共#页)?|共#页第#页|[-—–－~]*#[-—–－~]*|#/#|#of#|"
    r"page#(?:of#)?|p\.?#|\[#\]|（#）|\(#\)|[ivx]{1,5})$",
    re.IGNORECASE,
)


def _key(text: str) -> str:
    return _DIGITS.sub("#", normalize(text)).lower()


def is_page_number(text: str) -> bool:
    """Whether ``text`` is only a page number in one of the usual forms."""
    return bool(_PAGE_NUMBER.match(_key(text)))


@dataclass
class Running:
    """What :func:`find_running` found: ``drop[p]`` is the set of line indexes of page ``p`` to
    drop; ``header``/``footer``: the most frequent running text of each band, if any."""

    drop: list[set[int]]
    header: str | None = None
    footer: str | None = None


def _band_lines(lines: Sequence[Line], height: float) -> tuple[list[int], list[int]]:
    text_lines = [i for i, ln in enumerate(lines) if ln.table is None and ln.text]
    by_top = sorted(text_lines, key=lambda i: lines[i].top)
    top = [i for i in by_top[:EDGE_LINES] if lines[i].bottom <= height * BAND]
    bottom = [i for i in by_top[::-1][:EDGE_LINES] if lines[i].top >= height * (1 - BAND)]
    # a line nearer the middle than a body line is no header: keep only the outermost run
    top = [i for i in top if all(lines[j].top >= lines[i].top for j in by_top if j not in top)]
    bottom = [
        i
        for i in bottom
        if all(lines[j].bottom <= lines[i].bottom for j in by_top if j not in bottom)
    ]
    return top, bottom


def find_running(pages: Sequence[tuple[Sequence[Line], float]]) -> Running:
    """Running lines of every page; ``pages`` holds each page's lines and height."""
    bands = [_band_lines(lines, height) for lines, height in pages]
    counts: Counter[tuple[str, str]] = Counter()
    sizes: dict[tuple[str, str], list[float]] = {}
    for (lines, _), (top, bottom) in zip(pages, bands, strict=True):
        seen = [(("top", _key(lines[i].text)), lines[i].size) for i in top]
        seen += [(("bottom", _key(lines[i].text)), lines[i].size) for i in bottom]
        counts.update({key for key, _ in seen})  # pages, not lines
        for key, size in seen:
            sizes.setdefault(key, []).append(size)
    usual = {key: sorted(v)[len(v) // 2] for key, v in sizes.items()}
    need = max(2, math.ceil(0.4 * len(pages)))
    drop: list[set[int]] = []
    texts: dict[str, Counter[str]] = {"top": Counter(), "bottom": Counter()}
    for (lines, _), (top, bottom) in zip(pages, bands, strict=True):
        gone: set[int] = set()
        for band, members in (("top", top), ("bottom", bottom)):
            for i in members:
                slot = (band, _key(lines[i].text))
                if is_page_number(lines[i].text):
                    gone.add(i)
                elif (
                    len(pages) > 1
                    and counts[slot] >= need
                    # the same text in another size (a title under a header that repeats it)
                    and abs(lines[i].size - usual[slot]) <= 0.15 * usual[slot]
                ):
                    gone.add(i)
                    texts[band][lines[i].text] += 1
        drop.append(gone)
    header = texts["top"].most_common(1)[0][0] if texts["top"] else None
    footer = texts["bottom"].most_common(1)[0][0] if texts["bottom"] else None
    return Running(drop, header, footer)
