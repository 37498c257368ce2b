"""Table-row entries (``RAG_TABLE_ROW_ENTRIES``): each row of a table chunk indexed on its own.

A table chunk holds many rows under one repeated header; its BM25 score adds up every row's
matches, so a question that names one row's cells exactly can rank below chunks whose rows each
match a part of it. With this setting every row of a table chunk also gets its own entry in a
second keyword index (``row_fts``), naming the chunk: the row branch ranks chunks by their best
row, and retrieval still returns the whole chunk (header and span unchanged). The entries are
written, replaced and deleted with their chunk's keyword rows (store/ledger.py), in the same
transactions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_app.text.tokenizer import tokenize


def table_rows(chunk: Mapping[str, Any]) -> list[str]:
    """The table rows of a chunk row (``text``, ``prefix_chars``, ``suffix_chars``,
    ``block_types``): the ``|`` lines of its own text, the header and the separator line left
    out (also when the header is repeated in the prefix); none when the chunk holds no table."""
    if "table" not in str(chunk.get("block_types", "")).split(","):
        return []
    text = str(chunk["text"])
    body = text[int(chunk.get("prefix_chars", 0)) : len(text) - int(chunk.get("suffix_chars", 0))]
    lines = [ln.strip() for ln in body.splitlines()]
    rows = []
    for i, line in enumerate(lines):
        if not line.startswith("|") or not any(ch.isalnum() for ch in line):
            continue  # not a row, or the separator line
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if following.startswith("|") and not any(ch.isalnum() for ch in following):
            continue  # the header (the line above the separator): column names, no row
        rows.append(line)
    return rows


def row_keywords(chunk: Mapping[str, Any]) -> list[str]:
    """Keyword tokens (space separated, as the chunk index holds them) of each table row of the
    chunk, with the chunk's heading path as context."""
    title = str(chunk.get("title_path", ""))
    out = []
    for row in table_rows(chunk):
        tokens = tokenize(f"{title}\n\n{row}" if title else row)
        if tokens:
            out.append(" ".join(tokens))
    return out
