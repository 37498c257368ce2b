"""Lists with lead-ins: keep items whole and repeat the lead-in in every piece.

A list block starts with its lead-in sentence when it has one (e.g. "因下列情形之一导致被保险人
身故的，我们不承担给付保险金的责任："). When the list is over the budget it is cut between items;
the first piece is the source beginning (lead-in + first items), every later piece has
``prefix = lead_in + "\\n"`` followed by the next items of the source. An item is never cut unless
the lead-in plus that single item is over the budget: then the item is cut at sentence boundaries
(。！？；, line breaks; then ，; then anywhere) and the pieces are flagged ``oversized``.

A lead-in longer than half the budget is not repeated whole: its last clause (after the last
"，") is repeated if that fits, else nothing is (the items keep their heading path).
"""

from __future__ import annotations

from rag_app.chunking.block import Block
from rag_app.chunking.pieces import Piece, pack_units
from rag_app.chunking.sentences import split_spans
from rag_app.chunking.tokens import count_tokens

__all__ = ["ListSplitter", "lead_in_prefix"]

_ITEM_SEPARATORS = ("\n\n", "\n", "。", "！", "？", "；", "，", "")


def lead_in_prefix(text: str, block: Block, chunk_size: int) -> str:
    """The text repeated at the start of every list piece after the first (may be ``""``)."""
    if block.lead_in_span is None:
        return ""
    lead = text[block.lead_in_span[0] : block.lead_in_span[1]].strip()
    limit = max(chunk_size // 2, 1)
    if count_tokens(lead) <= limit:
        return lead + "\n"
    cut = max(lead.rfind("，", 0, len(lead) - 1), lead.rfind(",", 0, len(lead) - 1))
    if cut >= 0:
        tail = lead[cut + 1 :].strip()
        if tail and count_tokens(tail) <= limit:
            return tail + "\n"
    return ""


class ListSplitter:
    """Split list blocks between items under ``chunk_size`` tokens (see the module docstring)."""

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
        """Pieces of ``block``; ``None`` if not ``fresh`` and no item fits ``first_budget``."""
        assert block.kind == "list" and block.items
        return pack_units(
            text,
            block,
            block.items,
            head_end=block.items[0][0],
            prefix=lead_in_prefix(text, block, self.chunk_size),
            budget=self.chunk_size,
            first_budget=first_budget,
            fresh=fresh,
            cut=lambda s, e, avail: (
                split_spans(text, s, e, avail, separators=_ITEM_SEPARATORS) or []
            ),
        )
