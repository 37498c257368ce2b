"""Re-tokenise a knowledge base's keyword index after the tokenizer changed.

The keyword index holds each chunk's tokens as ``tokenize`` made them at ingestion. When a
release changes what ``tokenize`` makes of a text (``TOKENS_VERSION`` in
rag_app/text/tokenizer.py), the index is rewritten from the ledger's own chunk rows, the
heading path and text the built pipelines index, in one transaction, the first time a writer opens
the knowledge base: a keyword-only change costs a pass of the tokenizer over the chunks, not a
re-chunking and re-embedding of every document. The version written is kept in ``kb_meta``, so
the pass runs once; on PostgreSQL an advisory lock lets one of several openers do it.

Table-row entries (``RAG_TABLE_ROW_ENTRIES``) are rewritten for the chunks that had them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import and_, func, select, text
from sqlalchemy.engine import Connection

from rag_app.store.ledger import Ledger
from rag_app.store.schema import chunks, documents, get_meta, set_meta

log = logging.getLogger(__name__)

TOKENS_META = "keyword_tokens"  # kb_meta key: the TOKENS_VERSION the index was written with
_PG_RETOKENIZE_LOCK = 0x7261675F6B7764  # "rag_kwd"


def keyword_text(title_path: str, text: str) -> str:
    """What the keyword index holds of a chunk: the EMBED view of the built node parsers,
    heading path and text (chunking/nodes.py ``restrict_embed_metadata``)."""
    return f"{title_path}\n{text}" if title_path else text


def retokenize_keywords(
    ledger: Ledger,
    *,
    version: str,
    tokenize: Callable[[str], Sequence[str]],
    row_tokens: Callable[[Mapping[str, Any]], list[str]] | None = None,
) -> int | None:
    """Rewrite the keyword index with ``tokenize`` unless it was written with ``version``.

    ``row_tokens``: the tokens of each table row of a chunk (ingestion/row_entries.py), for
    the chunks that have table-row entries. Returns the chunks re-tokenised, or None when the
    index was already of ``version``.
    """
    if ledger.get_meta(TOKENS_META) == version:
        return None
    with ledger.engine.begin() as conn:
        if ledger.is_postgres:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_RETOKENIZE_LOCK})
        if get_meta(conn, TOKENS_META) == version:  # another opener did it meanwhile
            return None
        total = conn.execute(select(func.count()).select_from(chunks)).scalar_one()
        done = 0
        if total:
            log.warning(
                "the keyword index was written by another tokenizer version: re-tokenising "
                "%d chunks (once)",
                total,
            )
            rows_of = ledger.row_keywords
            with_rows = rows_of.chunk_ids(conn) if rows_of is not None else set()
            ledger.keywords.delete_all(conn)
            if rows_of is not None:
                rows_of.delete_all(conn)
            active = select(chunks).join(
                documents,
                and_(
                    documents.c.doc_id == chunks.c.doc_id,
                    documents.c.version == chunks.c.version,
                ),
            )
            for batch in _batches(conn, active):
                entries = []
                for r in batch:
                    key = {k: r[k] for k in ("chunk_id", "doc_id", "tenant", "version")}
                    tokens = " ".join(tokenize(keyword_text(r["title_path"], r["text"])))
                    if tokens:
                        entries.append(key | {"tokens": tokens})
                    row_entries = (
                        [key | {"tokens": t} for t in row_tokens(r)]
                        if row_tokens is not None and r["chunk_id"] in with_rows
                        else []
                    )
                    if rows_of is not None and row_entries:
                        rows_of.insert(conn, row_entries)
                if entries:
                    ledger.keywords.insert(conn, entries)
                done += len(batch)
        set_meta(conn, TOKENS_META, version)
    ledger.keywords_changed()
    return done


def _batches(conn: Connection, stmt: Any, size: int = 2000) -> Iterator[list[dict[str, Any]]]:
    """The statement's rows in chunk-id order, a page at a time (keyset pages on the primary
    key: the connection also writes, which a streaming server-side cursor would not allow)."""
    last = ""
    while rows := [
        dict(r)
        for r in conn.execute(
            stmt.where(chunks.c.chunk_id > last).order_by(chunks.c.chunk_id).limit(size)
        ).mappings()
    ]:
        yield rows
        last = rows[-1]["chunk_id"]
