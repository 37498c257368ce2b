"""The ledger's reads: documents and their active chunks (what is served), as typed records.

A mixin of :class:`~rag_app.store.ledger.Ledger` (which writes); query-path components depend on
the narrower protocols in store/protocols.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Engine

from rag_app.store.collections import documents_in
from rag_app.store.schema import CHUNK_FIELDS, chunks, documents
from rag_app.types import ChunkInfo, DocStatus, DocumentInfo


class LedgerReads:
    """Documents and active chunks, read from ``self.engine``."""

    engine: Engine

    def get_document(self, doc_id: str) -> DocumentInfo | None:
        rows = self._select_documents(documents.c.doc_id == doc_id)
        return rows[0] if rows else None

    def list_documents(
        self,
        tenant: str | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
        collections: Sequence[str] | None = None,
    ) -> list[DocumentInfo]:
        """Documents (of one tenant; in one of these ``collections``, by id), by path; a page of
        them with ``limit``/``offset``."""
        return self._select_documents(
            self._document_filter(tenant, collections), limit=limit, offset=offset
        )

    def count_documents(
        self, tenant: str | None = None, *, collections: Sequence[str] | None = None
    ) -> int:
        stmt = select(func.count()).select_from(documents)
        cond = self._document_filter(tenant, collections)
        if cond is not None:
            stmt = stmt.where(cond)
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    @staticmethod
    def _document_filter(tenant: str | None, collections: Sequence[str] | None) -> Any:
        conds: list[Any] = []
        if tenant is not None:
            conds.append(documents.c.tenant == tenant)
        if collections is not None:
            conds.append(documents.c.doc_id.in_(documents_in(collections)))
        return and_(*conds) if conds else None

    def _select_documents(
        self, cond: Any, *, limit: int | None = None, offset: int = 0
    ) -> list[DocumentInfo]:
        active = (
            select(func.count())
            .where(
                and_(chunks.c.doc_id == documents.c.doc_id, chunks.c.version == documents.c.version)
            )
            .scalar_subquery()
        )
        stmt = select(documents, active.label("chunk_count")).order_by(
            documents.c.rel_path, documents.c.doc_id
        )
        if cond is not None:
            stmt = stmt.where(cond)
        if limit is not None:
            stmt = stmt.limit(limit)
        if offset:
            stmt = stmt.offset(offset)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).mappings().all()
        return [
            DocumentInfo(
                doc_id=r["doc_id"],
                tenant=r["tenant"],
                source=r["source"],
                rel_path=r["rel_path"],
                doc_type=r["doc_type"],
                title=r["title"],
                content_hash=r["content_hash"],
                version=r["version"],
                status=DocStatus(r["status"]),
                error=r["error"],
                chunk_count=r["chunk_count"],
                size_bytes=r["size_bytes"],
                created_at=r["created_at"],
                updated_at=r["updated_at"],
            )
            for r in rows
        ]

    def fingerprint(self, doc_id: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(
                select(documents.c.fingerprint).where(documents.c.doc_id == doc_id)
            ).scalar_one_or_none()

    def find_all_by_hash(self, tenant: str, content_hash: str, limit: int = 50) -> list[str]:
        """The documents of ``tenant`` whose active content has this hash (several when keys
        limited to different collections uploaded the same file), by id."""
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    select(documents.c.doc_id)
                    .where(
                        and_(documents.c.tenant == tenant, documents.c.content_hash == content_hash)
                    )
                    .order_by(documents.c.doc_id)
                    .limit(limit)
                ).scalars()
            )

    def _chunk_select(self) -> Any:
        return (
            select(*(chunks.c[f] for f in CHUNK_FIELDS))
            .select_from(chunks.join(documents, chunks.c.doc_id == documents.c.doc_id))
            .where(chunks.c.version == documents.c.version)
        )

    def active_chunks(self, doc_id: str) -> list[ChunkInfo]:
        stmt = self._chunk_select().where(chunks.c.doc_id == doc_id).order_by(chunks.c.chunk_index)
        with self.engine.connect() as conn:
            return [ChunkInfo(**r) for r in conn.execute(stmt).mappings().all()]

    def active_chunks_at(self, doc_id: str, indices: Iterable[int]) -> dict[int, ChunkInfo]:
        """Active chunks of one document at the given chunk indices."""
        wanted = sorted(set(indices))
        if not wanted:
            return {}
        stmt = self._chunk_select().where(
            and_(chunks.c.doc_id == doc_id, chunks.c.chunk_index.in_(wanted))
        )
        with self.engine.connect() as conn:
            return {r["chunk_index"]: ChunkInfo(**r) for r in conn.execute(stmt).mappings().all()}

    def active_chunks_by_id(
        self, chunk_ids: Iterable[str], tenant: str | None = None
    ) -> dict[str, ChunkInfo]:
        """The subset of ``chunk_ids`` that are active (served) chunks, optionally of one tenant."""
        ids = list(dict.fromkeys(chunk_ids))
        found: dict[str, ChunkInfo] = {}
        for start in range(0, len(ids), 500):
            stmt = self._chunk_select().where(chunks.c.chunk_id.in_(ids[start : start + 500]))
            if tenant is not None:
                stmt = stmt.where(chunks.c.tenant == tenant)
            with self.engine.connect() as conn:
                for r in conn.execute(stmt).mappings().all():
                    found[r["chunk_id"]] = ChunkInfo(**r)
        return found

    def all_active_chunk_ids(self) -> set[str]:
        stmt = (
            select(chunks.c.chunk_id)
            .select_from(chunks.join(documents, chunks.c.doc_id == documents.c.doc_id))
            .where(chunks.c.version == documents.c.version)
        )
        with self.engine.connect() as conn:
            return set(conn.execute(stmt).scalars().all())

    def document_sources(self, doc_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """doc_id -> (source path, tenant)."""
        ids = list(set(doc_ids))
        if not ids:
            return {}
        stmt = select(documents.c.doc_id, documents.c.source, documents.c.tenant).where(
            documents.c.doc_id.in_(ids)
        )
        with self.engine.connect() as conn:
            return {r[0]: (r[1], r[2]) for r in conn.execute(stmt).all()}

    def only_tenant(self, tenant: str) -> bool:
        """True when every document row of the ledger belongs to ``tenant``: the smallest and
        the largest tenant name, two index look-ups (any backend)."""
        lowest = select(func.min(documents.c.tenant)).scalar_subquery()
        highest = select(func.max(documents.c.tenant)).scalar_subquery()
        with self.engine.connect() as conn:
            lo, hi = conn.execute(select(lowest, highest)).one()
        return lo == hi == tenant
