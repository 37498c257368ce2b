"""The parts a KnowledgeBase is composed of (rag_app/kb.py): its stores, opened and checked; its
documents; what a server needs.

``open_stores`` opens the ledger and the vector store and checks that they fit the settings;
``kb.documents`` lists, reads and deletes the documents (ledger and vectors together);
``kb.serving`` holds the API keys, the ingestion job queue and the keyword indexes' prewarming.
The other parts are the stores and services themselves: ``kb.ingestion``, ``kb.query``,
``kb.collections``, ``kb.feedback``, ``kb.annotations``, ``kb.chat``.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Sequence

from rag_app.config import Settings
from rag_app.faults import fault_point
from rag_app.ingestion.row_entries import row_keywords
from rag_app.store.api_keys import ApiKeyStore
from rag_app.store.collection_name import collection_for
from rag_app.store.jobs import JobQueue
from rag_app.store.ledger import Ledger
from rag_app.store.retokenize import retokenize_keywords
from rag_app.store.vectors import VectorStore
from rag_app.text.tokenizer import TOKENS_VERSION, tokenize
from rag_app.types import ChunkInfo, DocumentInfo

logger = logging.getLogger(__name__)


class KnowledgeBaseError(RuntimeError):
    """A knowledge-base level problem the user must fix (the message says how)."""


def open_stores(settings: Settings, *, read_only: bool) -> tuple[Ledger, VectorStore]:
    """The ledger and the vector store of a knowledge base, checked against the settings (the
    ledger closed again when a check fails). ``read_only``: no keyword re-tokenizing."""
    ledger = Ledger(settings.ledger_url(), keyword_cache_postings=settings.keyword_cache_postings)
    try:
        if settings.table_row_entries and not ledger.is_sqlite:
            raise KnowledgeBaseError(
                "RAG_TABLE_ROW_ENTRIES needs the SQLite ledger: unset it, or unset RAG_DATABASE_URL"
            )
        collection = collection_for(ledger, settings.collection)  # before the meta
        _check_embedding_matches(ledger, settings)
        if not read_only:  # a keyword-only tokenizer change: no re-embedding
            retokenize_keywords(
                ledger, version=TOKENS_VERSION, tokenize=tokenize, row_tokens=row_keywords
            )
        vectors = VectorStore(
            path=settings.kb_dir / "chroma", url=settings.chroma_url, collection=collection
        )
    except BaseException:
        ledger.close()
        raise
    return ledger, vectors


def _check_embedding_matches(ledger: Ledger, settings: Settings) -> None:
    built_with = ledger.get_meta("embedding")
    if built_with is None:
        ledger.set_meta("embedding", settings.embedding)
    elif built_with != settings.embedding:
        raise KnowledgeBaseError(
            f"knowledge base {settings.kb_dir} was built with embedding '{built_with}' but "
            f"'{settings.embedding}' is configured: set RAG_EMBEDDING={built_with} "
            "or ingest into a new --kb directory"
        )


class Documents:
    """The documents of a knowledge base: listed and read from the ledger (a PDF's chunks with
    their pages from the vectors), deleted from both."""

    def __init__(self, ledger: Ledger, vectors: VectorStore) -> None:
        self._ledger = ledger
        self._vectors = vectors

    def list(
        self,
        tenant: str | None = "default",
        *,
        limit: int | None = None,
        offset: int = 0,
        collections: Sequence[str] | None = None,
    ) -> builtins.list[DocumentInfo]:
        """Documents of one tenant (``tenant=None``: all tenants), ordered by path; one page of
        them with ``limit``/``offset``; only those in one of ``collections`` (ids) when given."""
        return self._ledger.list_documents(
            tenant, limit=limit, offset=offset, collections=collections
        )

    def count(
        self, tenant: str | None = "default", *, collections: Sequence[str] | None = None
    ) -> int:
        return self._ledger.count_documents(tenant, collections=collections)

    def get(self, doc_id: str) -> DocumentInfo | None:
        return self._ledger.get_document(doc_id)

    def chunks(self, doc_id: str) -> builtins.list[ChunkInfo]:
        """The active chunks of a document, in order; a paged document's (PDF) with their pages
        and OCR mark (kept with the vectors)."""
        chunks = self._ledger.active_chunks(doc_id)
        document = self._ledger.get_document(doc_id)
        if chunks and document is not None and document.doc_type == "pdf":
            stored = self._vectors.metadatas([c.chunk_id for c in chunks])
            for chunk in chunks:
                meta = stored.get(chunk.chunk_id, {})
                chunk.pages, chunk.ocr = str(meta.get("pages", "")), bool(meta.get("ocr", False))
        return chunks

    def with_hash(self, tenant: str, content_hash: str) -> builtins.list[str]:
        """The tenant's documents already holding this content (SHA-256), by id."""
        return self._ledger.find_all_by_hash(tenant, content_hash)

    def mark_failed(self, doc_id: str, reason: str) -> None:
        """Record that the document's ingestion failed, with the reason users see."""
        self._ledger.mark_failed(doc_id, reason)

    def delete(self, doc_id: str) -> bool:
        """Delete a document everywhere (and from its collections). Returns False when there was
        no such document."""
        existed = self._ledger.delete_document(doc_id)
        fault_point("delete.after_ledger")
        try:
            self._vectors.delete_document(doc_id)
        except Exception:
            logger.exception("deleting vectors of %s failed; run `rag doctor`", doc_id)
        return existed


class Serving:
    """What a server (rag_app/service) needs of a knowledge base beyond its documents."""

    def __init__(self, ledger: Ledger, settings: Settings) -> None:
        self._ledger = ledger
        self._settings = settings

    @property
    def api_keys(self) -> ApiKeyStore:
        """The API keys (hashed) of this knowledge base's ledger."""
        return self._ledger.api_keys

    def job_queue(self, max_attempts: int | None = None) -> JobQueue:
        """The ingestion job queue on this knowledge base's ledger."""
        attempts = self._settings.job_max_attempts if max_attempts is None else max_attempts
        return JobQueue(self._ledger, max_attempts=attempts)

    def prewarm(self) -> None:
        """Load the keyword indexes' most common posting lists (SQLite or PostgreSQL ledgers;
        a no-op otherwise), so that the first questions do not pay for it."""
        self._ledger.postings.prewarm()
        if self._settings.table_row_entries and self._ledger.row_keywords is not None:
            self._ledger.row_keywords.postings.prewarm()
