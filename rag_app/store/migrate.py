"""Copy a knowledge base's ledger to another database (SQLite → PostgreSQL when a KB outgrows one
machine).

    rag migrate --kb .rag/demo --to postgresql+psycopg://rag:secret@db/rag

What is copied: the KB metadata (embedding model and dimension), every document row, the chunks
of each document's *active* version (inactive rows are crash leftovers ``rag doctor`` would drop),
the keyword index rows of those chunks (SQLite FTS5 ⇄ PostgreSQL ``chunk_keywords``: the same
jieba tokens, so both backends index the same terms), API keys (hashes only) and the ingestion
queue (job ids kept; PostgreSQL's id sequence moved past them), collections (with their
documents and the keys limited to them), annotations (ids kept). Vectors are not in the ledger:
they stay where they are (the KB directory's Chroma, or the Chroma server), keyed by the same
chunk ids, so after the copy the KB opens with ``RAG_DATABASE_URL=<target>`` and serves the same
answers.

The target must be empty (no documents): the copy runs in one transaction, so a failure leaves
the target as it was and the source is only read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Table, and_, func, insert, select, text

from rag_app.store.ledger import Ledger
from rag_app.store.schema import (
    annotation_table,
    api_key_collections,
    api_keys,
    chunks,
    collection_documents,
    doc_collections,
    documents,
    jobs,
    meta_table,
    stream_rows,
)


class MigrationError(RuntimeError):
    """The ledger can't be copied (the message says why and what to do)."""


def copy_ledger(
    source: Ledger,
    target: Ledger,
    *,
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, int]:
    """Copy ``source`` into the empty ``target`` (see the module docstring); rows per table."""
    if source.url == target.url:
        raise MigrationError("source and target are the same database")
    with target.engine.connect() as conn:
        existing = conn.execute(select(func.count()).select_from(documents)).scalar_one()
    if existing:
        raise MigrationError(
            f"the target already holds {existing} documents; migrate into an empty database"
        )
    counts: dict[str, int] = {}

    def note(name: str, n: int) -> None:
        counts[name] = counts.get(name, 0) + n
        if progress is not None:
            progress(name, n)

    active_chunks = (
        select(chunks)
        .join(
            documents,
            and_(documents.c.doc_id == chunks.c.doc_id, documents.c.version == chunks.c.version),
        )
        .order_by(chunks.c.doc_id, chunks.c.chunk_index)
    )
    plain: list[tuple[str, Table, Any]] = [
        ("documents", documents, select(documents).order_by(documents.c.doc_id)),
        ("chunks", chunks, active_chunks),
        ("api_keys", api_keys, select(api_keys).order_by(api_keys.c.key_id)),
        ("jobs", jobs, select(jobs).order_by(jobs.c.job_id)),
        ("collections", doc_collections, select(doc_collections)),
        ("collection_documents", collection_documents, select(collection_documents)),
        ("api_key_collections", api_key_collections, select(api_key_collections)),
        (
            "annotations",
            annotation_table,
            select(annotation_table).order_by(annotation_table.c.annotation_id),
        ),
    ]
    with source.engine.connect() as src, target.engine.begin() as dst:
        # kb_meta rows are written when a ledger is opened (same keys): the source's win
        for row in src.execute(select(meta_table)).mappings():
            dst.execute(meta_table.delete().where(meta_table.c.key == row["key"]))
            dst.execute(insert(meta_table), [dict(row)])
            note("kb_meta", 1)
        for name, table, stmt in plain:
            for batch in stream_rows(src, stmt):
                dst.execute(insert(table), batch)
                note(name, len(batch))
        for batch in source.keywords.active_rows(src):
            target.insert_keywords(dst, batch)
            note("keywords", len(batch))
        if source.row_keywords is not None:
            for batch in source.row_keywords.active_rows(src):
                if target.row_keywords is None:
                    raise MigrationError(
                        "the knowledge base has table row entries (RAG_TABLE_ROW_ENTRIES), "
                        "which only a SQLite ledger holds: re-ingest it without them first"
                    )
                target.row_keywords.insert(dst, batch)
                note("row_keywords", len(batch))
        for name, column in (("jobs", "job_id"), ("annotations", "annotation_id")):
            if target.is_postgres and counts.get(name):
                dst.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{name}', '{column}'), "
                        f"(SELECT max({column}) FROM {name}))"
                    )
                )
    for name in ("documents", "chunks", "keywords", "api_keys", "jobs", "kb_meta"):
        counts.setdefault(name, 0)
    target.keywords_changed()
    return counts
