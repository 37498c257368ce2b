"""The ``Block`` record: one typed span of a document, as :func:`rag_app.chunking.blocks.parse_blocks`
returns it (and :mod:`rag_app.chunking.line_scan` first builds it for headings, tables and code)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BLOCK_KINDS", "Block"]

BLOCK_KINDS = ("heading", "paragraph", "list", "table", "code")


@dataclass(slots=True)
class Block:
    """A typed span of the document.

    Attributes:
        kind: ``heading`` | ``paragraph`` | ``list`` | ``table`` | ``code``.
        start, end: the span ``text[start:end]`` (trimmed of surrounding whitespace).
        text: ``text[start:end]``.
        level: the document-relative heading level (see the module docstring) for headings and
            for blocks that open a 第X条 article (their label joins the heading path), else None.
        label: the heading-path label for such blocks ("第三章 责任免除", "第十二条").
        scheme: the scheme of a heading or labelled block (``"markdown"`` for ``#`` headings,
            ``"article"`` for 第X条, ``"title"`` for a first line equal to the document title,
            else a name from the headings level table).
        item_scheme: lists: the numbering scheme of the first item (``"bullet"``/``"ordered"``
            for CommonMark items).
        path: the heading path at this block, its own label included.
        lead_in_span: lists: the lead-in sentence ending in "：" (inside the block), if any.
        items: lists: the span of every item (marker line to the end of its content).
        caption: tables: the caption text repeated with the header (``""`` if none).
        caption_span: tables: the caption's span when it is a line absorbed into the block.
        header_span, separator_span, rows: tables: the header row, the ``| --- |`` row, the rows.
        open_span, close_span: code: the opening fence line and the closing one (None if unclosed).
        fence: code: the closing fence to append to a piece (e.g. ```` ``` ````).
        info: code: the info string of the opening fence (e.g. ``python``).
    """

    kind: str
    start: int
    end: int
    text: str = ""
    level: int | None = None
    label: str | None = None
    scheme: str | None = None
    item_scheme: str | None = None
    path: tuple[str, ...] = ()
    lead_in_span: tuple[int, int] | None = None
    items: list[tuple[int, int]] = field(default_factory=list)
    caption: str = ""
    caption_span: tuple[int, int] | None = None
    header_span: tuple[int, int] | None = None
    separator_span: tuple[int, int] | None = None
    rows: list[tuple[int, int]] = field(default_factory=list)
    open_span: tuple[int, int] | None = None
    close_span: tuple[int, int] | None = None
    fence: str = ""
    info: str = ""
