"""Pieces: the units the chunker packs, and the splitters for paragraphs and code blocks.

A piece is a span of the document plus the text repeated on purpose before it (``prefix``: a table
header, a list lead-in, a code fence line) and after it (``suffix``: a closing code fence).
Only the first piece of a split block has no prefix; a piece with a prefix must start a chunk and a
piece with a suffix must end one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_app.chunking.block import Block
from rag_app.chunking.sentences import CHINESE_SEPARATORS, split_spans
from rag_app.chunking.tokens import count_tokens

__all__ = ["Piece", "pack_units", "split_code", "split_paragraph"]

_CODE_LINE_SEPARATORS = (" ", "")


@dataclass(slots=True)
class Piece:
    """A span to place in a chunk.

    Attributes:
        kind: the kind of the block it comes from.
        start, end: the source span.
        tokens: an upper bound of ``count_tokens(prefix + text[start:end] + suffix)``.
        prefix, suffix: repeated text (see the module docstring).
        oversized: an atomic unit (table row, list item, code line) had to be cut, or exceeds
            the budget on its own.
        path: the heading path of the block.
        opens_label: the piece starts a block that opens a heading-path element.
    """

    kind: str
    start: int
    end: int
    tokens: int
    prefix: str = ""
    suffix: str = ""
    oversized: bool = False
    path: tuple[str, ...] = ()
    opens_label: bool = False


def whole(block: Block, tokens: int) -> Piece:
    return Piece(
        block.kind,
        block.start,
        block.end,
        tokens,
        path=block.path,
        opens_label=block.level is not None,
    )


def pack_units(
    text: str,
    block: Block,
    units: Sequence[tuple[int, int]],
    *,
    head_end: int,
    prefix: str,
    budget: int,
    first_budget: int | None,
    fresh: bool,
    cut: Callable[[int, int, int], list[tuple[int, int, int]]],
) -> list[Piece] | None:
    """A table's rows or a list's items (``units``: source spans) packed into pieces of
    ``block.kind`` under the budget.

    The first piece is the block's own beginning (``text[block.start:head_end]``: the caption,
    header and separator, or the lead-in) and the first units that fit ``first_budget``; every
    later piece starts with ``prefix`` and holds the next units that fit ``budget``. A unit that
    does not fit alone (with the prefix) is cut by ``cut(start, end, avail)`` into contiguous
    ``(start, end, tokens)`` parts of at most ``avail`` tokens, one piece each, flagged
    ``oversized``. ``None``: not ``fresh`` and no unit fits ``first_budget``.
    """
    prefix_t = count_tokens(prefix)
    pieces: list[Piece] = []
    cur_start, cur_end = block.start, head_end
    cur_t = count_tokens(text[block.start : head_end])
    cur_prefix = ""
    cur_units = 0
    cur_over = False
    limit = budget if first_budget is None else first_budget

    def close() -> None:
        pieces.append(
            Piece(block.kind, cur_start, cur_end, cur_t, cur_prefix, "", cur_over, block.path)
        )

    for s, e in units:
        t = count_tokens(text[s:e])
        if cur_t + t <= limit:
            if cur_units == 0 and pieces:
                cur_start = s
            cur_end, cur_t, cur_units = e, cur_t + t, cur_units + 1
            continue
        if cur_units == 0 and not pieces and not fresh:
            return None
        if cur_units:
            close()
            cur_start, cur_end, cur_t, cur_prefix = s, s, prefix_t, prefix
            cur_units, cur_over, limit = 0, False, budget
            if cur_t + t <= limit:
                cur_end, cur_t, cur_units = e, cur_t + t, 1
                continue
        # the prefix plus this one unit is over the budget: cut the unit (flagged)
        avail = max(limit - max(cur_t, prefix_t), budget // 4, 1)
        for k, (ps, pe, pt) in enumerate(cut(s, e, avail)):
            if k:
                close()
                cur_start, cur_t, cur_prefix, limit = ps, prefix_t, prefix, budget
            cur_end, cur_t, cur_units, cur_over = pe, cur_t + pt, 1, True
        close()
        cur_start, cur_end, cur_t, cur_prefix = e, e, prefix_t, prefix
        cur_units, cur_over, limit = 0, False, budget
    if cur_units or not pieces:
        close()
    pieces[0].opens_label = block.level is not None
    return pieces


def split_paragraph(
    text: str, block: Block, first_budget: int, budget: int, *, fresh: bool
) -> list[Piece] | None:
    """Sentence-aligned pieces of an over-long paragraph (or heading) block.

    ``first_budget`` applies to the first piece, ``budget`` to the others. Returns ``None`` when
    ``fresh`` is false and the first sentence-level atom does not fit ``first_budget`` (with
    ``fresh``, that atom is cut further instead).
    """
    spans = split_spans(
        text,
        block.start,
        block.end,
        budget,
        first_budget=first_budget,
        separators=CHINESE_SEPARATORS,
        strict_first=not fresh,
    )
    if spans is None:
        return None
    pieces = [Piece(block.kind, s, e, t, path=block.path) for s, e, t in spans]
    if pieces:
        pieces[0].opens_label = block.level is not None
    return pieces


def split_code(
    text: str, block: Block, first_budget: int, budget: int, *, fresh: bool
) -> list[Piece] | None:
    """Split a fenced code block by lines; every piece is a balanced fenced block.

    Pieces after the first repeat the opening fence line (``prefix``), pieces before the last get
    the closing fence appended (``suffix``), as does the last one when the source never closes the
    fence. A single line over the budget is cut (at spaces, else anywhere) and flagged.
    """
    assert block.open_span is not None
    open_line = text[block.open_span[0] : block.open_span[1]]
    prefix = open_line + "\n"
    suffix = "\n" + block.fence
    open_t = count_tokens(open_line)
    fence_t = count_tokens(block.fence)
    body_start = block.open_span[1] + 1
    if block.close_span is not None:
        fence_t = max(fence_t, count_tokens(text[block.close_span[0] : block.close_span[1]]))
        # the line break that ends the last body line
        body_end = max(text.rfind("\n", body_start - 1, block.close_span[0]), body_start)
    else:
        body_end = block.end
    pieces: list[Piece] = []
    cur_start, cur_end, cur_t, cur_prefix = block.start, block.open_span[1], open_t, ""
    cur_lines = 0
    cur_over = False
    limit = first_budget

    def close() -> None:
        pieces.append(
            Piece(
                "code",
                cur_start,
                cur_end,
                cur_t + fence_t,
                cur_prefix,
                suffix,
                cur_over,
                block.path,
            )
        )

    pos = body_start
    while pos < body_end:
        nl = text.find("\n", pos, body_end)
        ls, le = pos, (body_end if nl == -1 else nl)
        pos = le + 1
        t = count_tokens(text[ls:le])
        if cur_t + t + fence_t <= limit:
            cur_end, cur_t, cur_lines = le, cur_t + t, cur_lines + 1
            continue
        if cur_lines == 0 and not pieces and not fresh:
            return None
        if cur_lines:
            close()
            cur_start, cur_end, cur_t, cur_prefix = ls, ls, open_t, prefix
            cur_lines, cur_over, limit = 0, False, budget
            if cur_t + t + fence_t <= limit:
                cur_end, cur_t, cur_lines = le, cur_t + t, 1
                continue
        # one line alone is over the budget: cut it (flagged); the last part stays open
        avail = max(limit - cur_t - fence_t, 1)
        parts = split_spans(text, ls, le, avail, separators=_CODE_LINE_SEPARATORS) or []
        for k, (_, e, pt) in enumerate(parts):
            cur_end, cur_t, cur_lines, cur_over = e, cur_t + pt, 1, True
            if k < len(parts) - 1:
                close()
                cur_start, cur_end, cur_t, cur_prefix = e, e, open_t, prefix
                limit = budget
    if block.close_span is not None:
        pieces.append(
            Piece(
                "code",
                cur_start,
                block.close_span[1],
                cur_t + fence_t,
                cur_prefix,
                "",
                cur_over,
                block.path,
            )
        )
    else:
        close()
    if pieces:
        pieces[0].opens_label = block.level is not None
    return pieces
