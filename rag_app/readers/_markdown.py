"""Small Markdown-rendering helpers shared by the DOCX and HTML readers."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["escape_block_start", "gfm_table", "one_line"]

_WS_RE = re.compile(r"\s+")
_HEADING_LIKE_RE = re.compile(r"^(\s{0,3})(#{1,6})(?=\s|$)")


def one_line(text: str) -> str:
    """Collapse all whitespace (including newlines) to single spaces and strip."""
    return _WS_RE.sub(" ", text.replace("\x00", "")).strip()


def escape_block_start(text: str) -> str:
    """Escape a leading ``#`` run so body text is not mistaken for a Markdown heading."""
    return _HEADING_LIKE_RE.sub(r"\1\\\2", text, count=1)


def _cell(text: str) -> str:
    return one_line(text).replace("|", "\\|")


def gfm_table(rows: Sequence[Sequence[str]]) -> str:
    """Render rows as a GFM table: first row is the header, then a ``| --- |`` separator.

    Cells are flattened to one line and pipes escaped as ``\\|``; short rows are padded.
    Returns ``""`` if there is no cell text at all.
    """
    cleaned = [[_cell(c) for c in row] for row in rows if len(row)]
    if not cleaned or not any(c for row in cleaned for c in row):
        return ""
    width = max(len(row) for row in cleaned)
    padded = [row + [""] * (width - len(row)) for row in cleaned]
    lines = ["| " + " | ".join(padded[0]) + " |", "| " + " | ".join(["---"] * width) + " |"]
    lines.extend("| " + " | ".join(row) + " |" for row in padded[1:])
    return "\n".join(lines)
