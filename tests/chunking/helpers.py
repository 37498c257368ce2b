"""Invariant checks shared by the chunking tests."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_app.chunking import Chunk, count_tokens

FENCE_LINE_RE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)


def uncovered(text: str, spans: Sequence[tuple[int, int]]) -> list[int]:
    """Offsets of non-whitespace characters of ``text`` outside every span."""
    covered = bytearray(len(text) + 1)
    for s, e in spans:
        covered[s:e] = b"\x01" * (e - s)
    return [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]


def check_chunks(text: str, chunks: Sequence[Chunk], chunk_size: int) -> None:
    """The properties every chunker here promises (spans honest, ordered, covering, budget)."""
    last_start = -1
    for c in chunks:
        assert 0 <= c.start_char <= c.end_char <= len(text)
        assert c.prefix_chars >= 0 and c.suffix_chars >= 0
        assert c.prefix_chars + c.suffix_chars <= len(c.text)
        assert c.body == text[c.start_char : c.end_char], "text != prefix + source span + suffix"
        assert c.start_char >= last_start, "chunks out of document order"
        last_start = c.start_char
        assert c.token_count == count_tokens(c.text)
        if not c.oversized:
            assert c.token_count <= chunk_size, (c.token_count, c.text[:80])
        assert c.text.strip(), "empty chunk"
    missing = uncovered(text, [(c.start_char, c.end_char) for c in chunks])
    assert not missing, (
        f"uncovered characters at {missing[:5]}: {text[missing[0] : missing[0] + 20]!r}"
    )


def fences_balanced(chunk_text: str) -> bool:
    return len(FENCE_LINE_RE.findall(chunk_text)) % 2 == 0
