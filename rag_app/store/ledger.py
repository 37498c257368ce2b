"""The ledger: documents, their versions and chunks (SQLAlchemy Core; SQLite or PostgreSQL).

The ledger is the source of truth. A document's ``version`` column is its *active* version: a
chunk is served only when its ``version`` equals that column. A new version's chunks are inserted
and the active version flipped in one transaction, so a crash at any step leaves either the old or
the new version fully active, never a mix.

``Ledger`` is the facade over the ledger's parts: the tables (store/schema.py), the reads of
documents and active chunks (store/reads.py), the keyword index, written in the same transaction
as the chunk rows (store/keywords.py: SQLite FTS5 or a PostgreSQL ``tsvector``), the API keys
(store/api_keys.py; ``ledger.api_keys``). The job queue (store/jobs.py) shares its engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    and_,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine, make_url

from rag_app.faults import fault_point
from rag_app.store.api_keys import ApiKeyStore
from rag_app.store.keywords import KeywordIndex, keyword_index
from rag_app.store.keywords_sqlite import SqliteKeywordIndex
from rag_app.store.reads import LedgerReads
from rag_app.store.schema import (
    CHUNK_FIELDS,
    chunks,
    clip_error,
    collection_documents,
    documents,
    get_meta,
    jobs,
    metadata,
    new_document,
    set_meta,
    utcnow,
)
from rag_app.types import DocStatus

__all__ = ["DocumentGone", "Ledger", "chunks", "documents"]

# Serializes schema creation of concurrent openers (CREATE TABLE IF NOT EXISTS races on PG).
_PG_SCHEMA_LOCK = 0x7261675F6C6467  # "rag_ldg"


class DocumentGone(LookupError):
    """The document was deleted while a new version of it was being built."""


class Ledger(LedgerReads):
    """Thin typed access to the ledger tables."""

    def __init__(self, url: str, *, keyword_cache_postings: int = 8_000_000) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        sa_url = make_url(url)
        self.is_postgres = sa_url.get_backend_name() == "postgresql"
        if self.is_postgres and sa_url.drivername == "postgresql":
            sa_url = sa_url.set(drivername="postgresql+psycopg")  # the driver we ship, not psycopg2
        self.engine: Engine = create_engine(sa_url, future=True, pool_pre_ping=self.is_postgres)
        self.keywords: KeywordIndex = keyword_index(
            self.engine,
            sqlite=self.is_sqlite,
            postgres=self.is_postgres,
            cache_postings=keyword_cache_postings,
        )
        # ranks keyword searches in memory by BM25 (0 = the index ranks every time: FTS5's
        # bm25(), PostgreSQL's ts_rank); off on other backends
        self.postings = self.keywords.postings
        # SQLite: table rows indexed one by one (ingestion/row_entries.py), empty unless written
        self.row_keywords: SqliteKeywordIndex | None = (
            SqliteKeywordIndex(self.engine, cache_postings=keyword_cache_postings, table="row_fts")
            if self.is_sqlite
            else None
        )
        self._indexes: list[KeywordIndex] = [self.keywords]
        if self.row_keywords is not None:
            self._indexes.append(self.row_keywords)
        self.api_keys = ApiKeyStore(self.engine)
        if self.is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
        if self.is_postgres:
            with self.engine.begin() as conn:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_SCHEMA_LOCK})
                metadata.create_all(conn)
                _add_new_indexes(conn)
                self.keywords.create(conn)
            return
        metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            _add_new_indexes(conn)
        if self.is_sqlite:
            with self.engine.begin() as conn:
                for index in self._indexes:
                    index.create(conn)
            self.keywords.upgrade()

    def close(self) -> None:
        self.engine.dispose()

    # ----- KB-level metadata -------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self.engine.connect() as conn:
            return get_meta(conn, key)

    def set_meta(self, key: str, value: str) -> None:
        with self.engine.begin() as conn:
            set_meta(conn, key, value)

    # ----- document lifecycle ------------------------------------------------------------
    def begin_document(
        self, *, doc_id: str, tenant: str, source: str, rel_path: str, doc_type: str, size: int
    ) -> int:
        """Register (or re-mark) a document as PROCESSING; return its next version number."""
        now = utcnow()
        with self.engine.begin() as conn:
            current = conn.execute(
                select(documents.c.version).where(documents.c.doc_id == doc_id)
            ).scalar_one_or_none()
            if current is None:
                conn.execute(
                    new_document(doc_id, tenant, source, rel_path, doc_type, size, now).values(
                        status=DocStatus.PROCESSING.value
                    )
                )
                current = 0
            else:
                conn.execute(
                    update(documents)
                    .where(documents.c.doc_id == doc_id)
                    .values(status=DocStatus.PROCESSING.value, error=None, updated_at=now)
                )
            highest = conn.execute(
                select(func.max(chunks.c.version)).where(chunks.c.doc_id == doc_id)
            ).scalar_one_or_none()
        return max(current, highest or 0) + 1

    def register_pending(
        self, *, doc_id: str, tenant: str, source: str, rel_path: str, doc_type: str, size: int
    ) -> None:
        """Create (or re-mark) a document as PENDING: queued, its active version still served."""
        with self.engine.begin() as conn:
            self.register_pending_in(
                conn,
                doc_id=doc_id,
                tenant=tenant,
                source=source,
                rel_path=rel_path,
                doc_type=doc_type,
                size=size,
            )

    @staticmethod
    def register_pending_in(
        conn: Any,
        *,
        doc_id: str,
        tenant: str,
        source: str,
        rel_path: str,
        doc_type: str,
        size: int,
    ) -> None:
        """:meth:`register_pending` inside the caller's transaction ``conn`` (the job queue
        writes the document and its job in one)."""
        now = utcnow()
        done = conn.execute(
            update(documents)
            .where(documents.c.doc_id == doc_id)
            .values(status=DocStatus.PENDING.value, error=None, updated_at=now)
        )
        if not done.rowcount:
            conn.execute(
                new_document(doc_id, tenant, source, rel_path, doc_type, size, now).values(
                    status=DocStatus.PENDING.value
                )
            )

    def mark_failed(self, doc_id: str, error: str) -> None:
        """Record a failure; the active version (if any) stays active and queryable."""
        with self.engine.begin() as conn:
            conn.execute(
                update(documents)
                .where(documents.c.doc_id == doc_id)
                .values(status=DocStatus.FAILED.value, error=clip_error(error), updated_at=utcnow())
            )

    def commit_version(
        self,
        *,
        doc_id: str,
        tenant: str,
        version: int,
        rows: Sequence[dict[str, Any]],
        content_hash: str,
        fingerprint: str,
        doc_type: str,
        title: str | None,
        source: str,
        size: int,
    ) -> None:
        """Insert a version's chunks and make it the active version, in one transaction.

        Raises :class:`DocumentGone` (and writes nothing) when the document row was deleted
        meanwhile, so a delete racing an ingestion job never resurrects the document.
        """
        with self.engine.begin() as conn:
            exists = conn.execute(
                select(documents.c.doc_id).where(documents.c.doc_id == doc_id)
            ).scalar_one_or_none()
            if exists is None:
                raise DocumentGone(doc_id)
            conn.execute(
                delete(chunks).where(and_(chunks.c.doc_id == doc_id, chunks.c.version == version))
            )
            if rows:
                conn.execute(
                    insert(chunks),
                    [
                        {k: v for k, v in r.items() if k in CHUNK_FIELDS}
                        | {"doc_id": doc_id, "tenant": tenant, "version": version}
                        for r in rows
                    ],
                )
            for index in self._indexes:
                index.delete_version(conn, doc_id, version)
            entries = [  # table rows (ingestion/row_entries.py), each naming its chunk
                {"chunk_id": r["chunk_id"], "doc_id": doc_id, "tenant": tenant, "version": version}
                | {"tokens": tokens}
                for r in rows
                for tokens in r.get("row_keywords") or ()
            ]
            if entries and self.row_keywords is None:
                raise ValueError("table row entries need a SQLite ledger (RAG_TABLE_ROW_ENTRIES)")
            if entries and self.row_keywords is not None:
                self.row_keywords.insert(conn, entries)
            self.insert_keywords(
                conn,
                [
                    {
                        "chunk_id": r["chunk_id"],
                        "doc_id": doc_id,
                        "tenant": tenant,
                        "version": version,
                        "tokens": r["keywords"],
                    }
                    for r in rows
                    if r.get("keywords")
                ],
            )
            fault_point("ingest.in_commit")  # chunks written, version not flipped yet
            conn.execute(
                update(documents)
                .where(documents.c.doc_id == doc_id)
                .values(
                    version=version,
                    status=DocStatus.SUCCESS.value,
                    error=None,
                    content_hash=content_hash,
                    fingerprint=fingerprint,
                    doc_type=doc_type,
                    title=title,
                    source=source,
                    size_bytes=size,
                    updated_at=utcnow(),
                )
            )
        self.keywords_changed()

    def mark_unchanged(self, doc_id: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(documents)
                .where(documents.c.doc_id == doc_id)
                .values(status=DocStatus.SUCCESS.value, error=None, updated_at=utcnow())
            )

    def delete_inactive_chunks(self, doc_id: str) -> int:
        """Drop chunk rows of every version that is not the document's active one."""
        with self.engine.begin() as conn:
            active = select(documents.c.version).where(documents.c.doc_id == doc_id)
            result = conn.execute(
                delete(chunks).where(
                    and_(chunks.c.doc_id == doc_id, chunks.c.version != active.scalar_subquery())
                )
            )
            for index in self._indexes:
                index.delete_inactive(conn, doc_id)
        self.keywords_changed()
        return int(result.rowcount or 0)

    def purge_inactive(self, repair: bool = True) -> tuple[int, int]:
        """Chunk rows and keyword rows of versions that are not active (left by a crash).

        Returns (chunk rows, keyword rows) found; deletes them when ``repair``.
        """
        inactive_chunks = (
            and_(
                chunks.c.version
                != select(documents.c.version)
                .where(documents.c.doc_id == chunks.c.doc_id)
                .scalar_subquery()
            )
            | ~select(documents.c.doc_id).where(documents.c.doc_id == chunks.c.doc_id).exists()
        )
        with self.engine.begin() as conn:
            n_chunks = int(conn.execute(select(func.count()).where(inactive_chunks)).scalar_one())
            n_fts = sum(index.count_inactive(conn) for index in self._indexes)
            if repair:
                conn.execute(delete(chunks).where(inactive_chunks))
                for index in self._indexes:
                    index.purge_inactive(conn)
        if repair:
            self.keywords_changed()
        return n_chunks, n_fts

    def delete_document(self, doc_id: str) -> bool:
        with self.engine.begin() as conn:
            conn.execute(delete(chunks).where(chunks.c.doc_id == doc_id))
            for index in self._indexes:
                index.delete_document(conn, doc_id)
            result = conn.execute(delete(documents).where(documents.c.doc_id == doc_id))
            conn.execute(
                delete(collection_documents).where(collection_documents.c.doc_id == doc_id)
            )
        self.keywords_changed()
        return bool(result.rowcount)

    def keywords_changed(self) -> None:
        """This process wrote keyword rows: cached statistics of every index are out of date."""
        for index in self._indexes:
            index.changed()

    # ----- the keyword index (store/keywords.py) -----------------------------------------
    def insert_keywords(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
        """Add keyword index rows (chunk_id, doc_id, tenant, version, tokens) inside the caller's
        transaction: the FTS5 table on SQLite, ``chunk_keywords`` on PostgreSQL."""
        if not rows:
            return
        self.keywords.insert(conn, rows)

    def row_keyword_search_ranked(
        self, tokens: Sequence[str], *, tenant: str, doc_ids: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        """Active chunks of one tenant (optionally some documents) ranked by their best table
        row (ingestion/row_entries.py), best first; empty when no row entry was written."""
        if self.row_keywords is None or not tokens or limit <= 0:
            return []
        return self.row_keywords.search_ranked(tokens, tenant=tenant, doc_ids=doc_ids, limit=limit)

    def keyword_search(
        self,
        tokens: Sequence[str],
        *,
        tenant: str,
        doc_ids: Sequence[str] | None = None,
        limit: int = 20,
    ) -> list[tuple[str, float]]:
        """Keyword search over the active chunks of one tenant (optionally some documents):
        (chunk id, score), best first. Each token is a phrase; any of them matches. SQLite: FTS5
        BM25; PostgreSQL: IDF-weighted ``ts_rank`` (scores differ in scale, not in use)."""
        if not tokens or limit <= 0:
            return []
        return self.keywords.search(tokens, tenant=tenant, doc_ids=doc_ids, limit=limit)

    def keyword_search_ranked(
        self,
        tokens: Sequence[str],
        *,
        tenant: str,
        doc_ids: Sequence[str] | None = None,
        limit: int = 20,
    ) -> list[tuple[str, float]]:
        """What :meth:`keyword_search` returns (same ids, scores and order), cheaper on SQLite
        (ranked in memory from cached posting lists when it can; see store/keywords_sqlite.py)."""
        if not tokens or limit <= 0:
            return []
        return self.keywords.search_ranked(tokens, tenant=tenant, doc_ids=doc_ids, limit=limit)

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """(term -> number of indexed chunks containing it, total indexed chunks)."""
        if not terms:
            return {}, 0
        return self.keywords.term_document_frequencies(terms)

    def keyword_count(self) -> int:
        return self.keywords.count()

    def keyword_index_version(self) -> bytes | None:
        """A marker that changes whenever the keyword index changes (SQLite: FTS5's structure
        record, whose cookie every write transaction to the index bumps), so figures derived from
        the index can be cached per version. None on other backends (nothing to cache by)."""
        return self.keywords.version()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def _add_new_indexes(conn: Connection) -> None:
    """Indexes and columns added to existing tables since their creation (``create_all``
    creates a table's indexes and columns only with the table): added here to a knowledge base
    made before them."""
    for index in jobs.indexes:
        index.create(conn, checkfirst=True)
    have = {c["name"] for c in inspect(conn).get_columns("conversations")}
    if "collections" not in have:
        conn.execute(
            text("ALTER TABLE conversations ADD COLUMN collections TEXT NOT NULL DEFAULT '[]'")
        )
    if "expected" not in {c["name"] for c in inspect(conn).get_columns("feedback")}:
        conn.execute(text("ALTER TABLE feedback ADD COLUMN expected TEXT"))
