"""TableSplitter: split a GFM table by rows, repeating caption + header row + separator.

* A table within the budget stays whole (the chunker never calls the splitter for it).
* A longer one is cut between rows into pieces within the budget. The first piece is the table's
  own beginning (caption line if absorbed, header, separator, first rows); every later piece has
  ``prefix = caption + "\\n" + header + "\\n" + separator + "\\n"`` (caption only if the table has
  one) followed by the next rows of the source. A row is never cut...
* ...unless the header plus that single row is over the budget: then the row is cut between cells
  (a cell over the budget is cut at sentence boundaries), each part with the header repeated, and
  the pieces are flagged ``oversized``.
"""

from __future__ import annotations

from rag_app.chunking.block import Block
from rag_app.chunking.pieces import Piece, pack_units
from rag_app.chunking.sentences import split_spans
from rag_app.chunking.tokens import count_tokens

__all__ = ["TableSplitter", "table_prefix"]

_CELL_SEPARATORS = ("。", "；", "，", " ", "")


def table_prefix(text: str, block: Block) -> str:
    """The text repeated at the start of every table piece after the first."""
    assert block.header_span is not None and block.separator_span is not None
    header = text[block.header_span[0] : block.header_span[1]]
    sep = text[block.separator_span[0] : block.separator_span[1]]
    lines = [block.caption, header, sep] if block.caption else [header, sep]
    return "\n".join(lines) + "\n"


def _cell_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Cut a row ``| a | b |`` before every unescaped ``|`` except the last one."""
    cuts = [start]
    i = text.find("|", start + 1, end)
    while i != -1:
        if text[i - 1] != "\\":
            cuts.append(i)
        i = text.find("|", i + 1, end)
    if len(cuts) > 1 and not text[cuts[-1] : end].strip(" \t|"):
        cuts.pop()  # the closing pipe stays with the last cell
    cuts.append(end)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if a < b]


class TableSplitter:
    """Split table blocks by rows under ``chunk_size`` tokens (see the module docstring)."""

    def __init__(self, chunk_size: int) -> None:
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
        self.chunk_size = chunk_size

    def split(
        self,
        text: str,
        block: Block,
        first_budget: int | None = None,
        *,
        fresh: bool = True,
    ) -> list[Piece] | None:
        """Pieces of ``block``; ``None`` if not ``fresh`` and no row fits ``first_budget``."""
        assert block.kind == "table" and block.separator_span is not None
        return pack_units(
            text,
            block,
            block.rows,
            head_end=block.separator_span[1],
            prefix=table_prefix(text, block),
            budget=self.chunk_size,
            first_budget=first_budget,
            fresh=fresh,
            cut=lambda s, e, avail: self._row_parts(text, s, e, avail),
        )

    @staticmethod
    def _row_parts(text: str, start: int, end: int, avail: int) -> list[tuple[int, int, int]]:
        """Contiguous parts of one row, each at most ``avail`` tokens, cut between cells."""
        units: list[tuple[int, int, int]] = []
        for a, b in _cell_spans(text, start, end):
            t = count_tokens(text[a:b])
            if t <= avail:
                units.append((a, b, t))
            else:
                sub = split_spans(text, a, b, avail, separators=_CELL_SEPARATORS) or []
                # keep the parts contiguous (split_spans trims whitespace between them)
                for k, (s, e, st) in enumerate(sub):
                    s = a if k == 0 else s
                    e = b if k == len(sub) - 1 else e
                    units.append((s, e, st))
        parts: list[tuple[int, int, int]] = []
        for a, b, t in units:
            if parts and parts[-1][2] + t <= avail:
                s, _, pt = parts[-1]
                parts[-1] = (s, b, pt + t)
            else:
                parts.append((a, b, t))
        return parts
