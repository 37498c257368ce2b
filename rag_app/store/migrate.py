"""Copy a knowledge base's ledger to another database (SQLite → PostgreSQL when a KB outgrows one
machine).

    rag migrate --kb .rag/demo --to postgresql+psycopg://rag:secret@db/rag

What is copied: the KB metadata (embedding model and dimension), every document row, the chunks
of each document's *active* version (inactive rows are crash leftovers ``rag doctor`` would drop),
the keyword index rows of those chunks (SQLite FTS5 ⇄ PostgreSQL ``chunk_keywords``: the same
jieba tokens, so both backends index the same terms), API keys (hashes only) and the ingestion
queue (job ids kept; PostgreSQL's id sequence moved past them). Vectors are not in the ledger:
they stay where they are (the KB directory's Chroma, or the Chroma server), keyed by the same
chunk ids, so after the copy the KB opens with ``RAG_DATABASE_URL=<target>`` and serves the same
answers.

The target must be empty (no documents): the copy runs in one transaction, so a failure leaves
the target as it was and the source is only read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Table, and_, func, insert, select, text
from sqlalchemy.engine import Connection

from rag_app.store.ledger import (
    Ledger,
    api_keys,
    chunk_keywords,
    chunks,
    documents,
    jobs,
    meta_table,
)

BATCH = 2000


class MigrationError(RuntimeError):
    """The ledger can't be copied (the message says why and what to do)."""


def _rows(conn: Connection, stmt: Any) -> Iterator[list[dict[str, Any]]]:
    """The statement's rows as dicts, in batches."""
    result = conn.execution_options(stream_results=True).execute(stmt).mappings()
    while batch := result.fetchmany(BATCH):
        yield [dict(r) for r in batch]


def _keyword_rows(source: Ledger, conn: Connection) -> Iterator[list[dict[str, Any]]]:
    """Keyword rows (chunk_id, doc_id, tenant, version, tokens) of the active chunks."""
    if source.is_postgres:
        stmt = (
            select(
                chunk_keywords.c.chunk_id,
                chunk_keywords.c.doc_id,
                chunk_keywords.c.tenant,
                chunk_keywords.c.version,
                chunk_keywords.c.tokens,
            )
            .join(
                documents,
                and_(
                    documents.c.doc_id == chunk_keywords.c.doc_id,
                    documents.c.version == chunk_keywords.c.version,
                ),
            )
            .order_by(chunk_keywords.c.chunk_id)
        )
        yield from _rows(conn, stmt)
        return
    fts = text(
        "SELECT f.chunk_id, f.doc_id, f.tenant, CAST(f.version AS INTEGER) AS version, f.tokens "
        "FROM chunk_fts AS f JOIN documents AS d "
        "ON d.doc_id = f.doc_id AND d.version = f.version ORDER BY f.rowid"
    )
    yield from _rows(conn, fts)


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
    ]
    with source.engine.connect() as src, target.engine.begin() as dst:
        # kb_meta rows are written when a ledger is opened (same keys): the source's win
        for row in src.execute(select(meta_table)).mappings():
            dst.execute(meta_table.delete().where(meta_table.c.key == row["key"]))
            dst.execute(insert(meta_table), [dict(row)])
            note("kb_meta", 1)
        for name, table, stmt in plain:
            for batch in _rows(src, stmt):
                dst.execute(insert(table), batch)
                note(name, len(batch))
        for batch in _keyword_rows(source, src):
            target.insert_keywords(dst, batch)
            note("keywords", len(batch))
        if target.is_postgres and counts.get("jobs"):
            dst.execute(
                text(
                    "SELECT setval(pg_get_serial_sequence('jobs', 'job_id'), "
                    "(SELECT max(job_id) FROM jobs))"
                )
            )
    for name in ("documents", "chunks", "keywords", "api_keys", "jobs", "kb_meta"):
        counts.setdefault(name, 0)
    target._keywords_changed()
    return counts
