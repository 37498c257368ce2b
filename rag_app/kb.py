"""The KnowledgeBase facade: open, ingest, retrieve, ask, documents, chunks, delete, doctor.

A knowledge base is one directory (or a ledger URL and a Chroma server) and a few components,
each with one job: the ledger (store/ledger.py, the source of truth) and the vector store
(store/vectors.py); ingestion (ingestion/service.py); retrieval and answering (query.py); the
crash repair (store/doctor.py). This class opens and closes them, loads the embedding model once
(on first use) for both sides, and keeps the public API in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import NodeWithScore

from rag_app.analysis.followup_llm import LLMFollowUpRewriter
from rag_app.annotations import AnnotationService
from rag_app.chat import ChatService
from rag_app.config import Settings
from rag_app.embeddings import load_embedding
from rag_app.engine import AnswerEngine
from rag_app.faults import fault_point
from rag_app.ingestion.files import collect_files, internal_error, make_doc_id
from rag_app.ingestion.row_entries import row_keywords
from rag_app.ingestion.service import IngestionService, ProgressCallback
from rag_app.query import QueryService, node_to_source
from rag_app.retrieval.hybrid import HybridRetriever
from rag_app.retrieval.scope import Request
from rag_app.retrieval.stats import TermStatistics
from rag_app.store import doctor
from rag_app.store.annotations import AnnotationStore
from rag_app.store.api_keys import ApiKeyStore
from rag_app.store.collection_name import collection_for
from rag_app.store.collections import CollectionStore
from rag_app.store.conversations import ConversationStore
from rag_app.store.feedback import FeedbackStore
from rag_app.store.jobs import JobQueue
from rag_app.store.ledger import Ledger
from rag_app.store.retokenize import retokenize_keywords
from rag_app.store.vectors import VectorStore
from rag_app.store.writer_lock import WriterLock
from rag_app.synthesis.citations import TextSink
from rag_app.text.tokenizer import TOKENS_VERSION, tokenize
from rag_app.types import Answer, ChunkInfo, DocumentInfo, FileResult, IngestReport, Source

__all__ = [
    "KnowledgeBase",
    "KnowledgeBaseError",
    "ProgressCallback",
    "collect_files",
    "internal_error",
    "make_doc_id",
    "node_to_source",
]

logger = logging.getLogger(__name__)


class KnowledgeBaseError(RuntimeError):
    """A knowledge-base level problem the user must fix (the message says how)."""


class KnowledgeBase:
    """A knowledge base in one directory: ledger (SQLite) + vectors (Chroma).

    >>> kb = KnowledgeBase.open(".rag")                       # doctest: +SKIP
    >>> kb.ingest(["data/knowledge"], tenant="default")       # doctest: +SKIP
    >>> kb.retrieve("密码多久修改一次", top_k=5)                # doctest: +SKIP
    """

    def __init__(
        self,
        settings: Settings,
        embed_model: BaseEmbedding | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        """``read_only``: this process won't write (no writer lock; see store/writer_lock.py)."""
        self.settings = settings
        self.path = settings.kb_dir
        self.path.mkdir(parents=True, exist_ok=True)
        # a local Chroma has one writing process: raises KnowledgeBaseBusy while another holds it
        local = settings.chroma_url is None
        self._writer = WriterLock(self.path) if local and not read_only else None
        try:
            self.ledger = Ledger(
                settings.ledger_url(), keyword_cache_postings=settings.keyword_cache_postings
            )
        except BaseException:
            self._release_writer()
            raise
        try:
            if settings.table_row_entries and not self.ledger.is_sqlite:
                raise KnowledgeBaseError(
                    "RAG_TABLE_ROW_ENTRIES needs the SQLite ledger: unset it, or unset "
                    "RAG_DATABASE_URL"
                )
            collection = collection_for(self.ledger, settings.collection)  # before the meta
            self._check_embedding_matches()
            if not read_only:  # a keyword-only tokenizer change: no re-embedding
                retokenize_keywords(
                    self.ledger, version=TOKENS_VERSION, tokenize=tokenize, row_tokens=row_keywords
                )
            self.vectors = VectorStore(
                path=self.path / "chroma", url=settings.chroma_url, collection=collection
            )
        except BaseException:
            self.ledger.close()
            self._release_writer()
            raise
        self._embed_model: BaseEmbedding | None = embed_model
        self.stats = TermStatistics(self.ledger)
        self.ingestion = IngestionService(settings, self.ledger, self.vectors, self._embedding)
        self.query = QueryService(settings, self.ledger, self.vectors, self._embedding, self.stats)
        self.chat = ChatService(
            ConversationStore(
                self.ledger.engine,
                max_turns=settings.chat_max_turns,
                keep_days=settings.chat_keep_days,
            ),
            self.ask,
            rewriter=LLMFollowUpRewriter.from_settings(settings),  # None without an LLM
        )
        self.feedback = FeedbackStore(self.ledger.engine)
        self.collections = CollectionStore(self.ledger.engine)
        self.annotations = AnnotationService(  # answered first (rag_app/annotations.py)
            AnnotationStore(self.ledger.engine), self.ledger, self._embedding, settings.embedding
        )

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        settings: Settings | None = None,
        *,
        embed_model: BaseEmbedding | None = None,
        read_only: bool = False,
        **overrides: Any,
    ) -> KnowledgeBase:
        """Create or open the knowledge base in ``path`` (default: ``RAG_KB_DIR`` or ``./.rag``).

        ``overrides`` are Settings fields (e.g. ``chunker="sentence"``); ``embed_model`` lets
        several knowledge bases share one loaded model; ``read_only``: only read (ask,
        retrieve, list), so no writer lock is taken (see store/writer_lock.py).
        """
        base = settings or Settings()
        updates = dict(overrides)
        if path is not None:
            updates["kb_dir"] = Path(path)
        if updates:
            base = Settings(**{**base.model_dump(), **updates})
        return cls(base, embed_model=embed_model, read_only=read_only)

    def close(self) -> None:
        self.ledger.close()
        self._release_writer()

    def _release_writer(self) -> None:
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- models ------------------------------------------------------------------------
    def _check_embedding_matches(self) -> None:
        built_with = self.ledger.get_meta("embedding")
        if built_with is None:
            self.ledger.set_meta("embedding", self.settings.embedding)
        elif built_with != self.settings.embedding:
            raise KnowledgeBaseError(
                f"knowledge base {self.path} was built with embedding '{built_with}' but "
                f"'{self.settings.embedding}' is configured: set RAG_EMBEDDING={built_with} "
                "or ingest into a new --kb directory"
            )

    @property
    def embed_model(self) -> BaseEmbedding:
        if self._embed_model is None:
            self._embed_model = load_embedding(
                self.settings.embedding,
                batch_size=self.settings.embed_batch_size,
                threads=self.settings.embed_threads,
                cache_dir=self.settings.cache_dir,
                e5_engine=self.settings.e5_engine,
            )
        return self._embed_model

    def _embedding(self) -> BaseEmbedding:
        return self.embed_model

    @property
    def pipeline(self) -> IngestionPipeline:
        return self.ingestion.pipeline

    # ----- ingestion (ingestion/service.py) ---------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        tenant: str = "default",
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively). Bad files fail alone; the rest still ingest."""
        return self.ingestion.ingest(paths, tenant, progress)

    def ingest_one(
        self,
        path: str | Path,
        *,
        tenant: str = "default",
        rel_path: str | None = None,
        doc_id: str | None = None,
        force: bool = False,
    ) -> FileResult:
        """Ingest one file as document ``doc_id`` (default: from tenant + ``rel_path``).

        ``force`` re-parses even when the content and pipeline are unchanged (a new version).
        """
        return self.ingestion.ingest_one(
            path, tenant=tenant, rel_path=rel_path, doc_id=doc_id, force=force
        )

    # ----- reading -----------------------------------------------------------------------
    def documents(
        self,
        tenant: str | None = "default",
        *,
        limit: int | None = None,
        offset: int = 0,
        collections: Sequence[str] | None = None,
    ) -> list[DocumentInfo]:
        """Documents of one tenant (``tenant=None``: all tenants), ordered by path; one page of
        them with ``limit``/``offset``; only those in one of ``collections`` (ids) when given."""
        return self.ledger.list_documents(
            tenant, limit=limit, offset=offset, collections=collections
        )

    def document_count(
        self, tenant: str | None = "default", *, collections: Sequence[str] | None = None
    ) -> int:
        return self.ledger.count_documents(tenant, collections=collections)

    def document(self, doc_id: str) -> DocumentInfo | None:
        return self.ledger.get_document(doc_id)

    def chunks(self, doc_id: str) -> list[ChunkInfo]:
        """The active chunks of a document, in order; a paged document's (PDF) with their pages
        and OCR mark (kept with the vectors)."""
        chunks = self.ledger.active_chunks(doc_id)
        document = self.ledger.get_document(doc_id)
        if chunks and document is not None and document.doc_type == "pdf":
            stored = self.vectors.metadatas([c.chunk_id for c in chunks])
            for chunk in chunks:
                meta = stored.get(chunk.chunk_id, {})
                chunk.pages, chunk.ocr = str(meta.get("pages", "")), bool(meta.get("ocr", False))
        return chunks

    def documents_with_hash(self, tenant: str, content_hash: str) -> list[str]:
        """The tenant's documents already holding this content (SHA-256), by id."""
        return self.ledger.find_all_by_hash(tenant, content_hash)

    def mark_failed(self, doc_id: str, reason: str) -> None:
        """Record that the document's ingestion failed, with the reason users see."""
        self.ledger.mark_failed(doc_id, reason)

    def answer_settings(self) -> dict[str, Any]:
        """What answers with this knowledge base (kept with feedback): the embedding, the gate and
        its threshold, the reader, whether an LLM writes the answers."""
        s = self.settings
        return {"embedding": s.embedding, "gate": s.gate, "gate_threshold": s.gate_threshold,
                "reader": s.reader, "llm": s.llm_base_url is not None}  # fmt: skip

    @property
    def api_keys(self) -> ApiKeyStore:
        """The API keys (hashed) of this knowledge base's ledger."""
        return self.ledger.api_keys

    def job_queue(self, max_attempts: int | None = None) -> JobQueue:
        """The ingestion job queue on this knowledge base's ledger."""
        attempts = self.settings.job_max_attempts if max_attempts is None else max_attempts
        return JobQueue(self.ledger, max_attempts=attempts)

    def prewarm(self) -> None:
        """Load the keyword indexes' most common posting lists (SQLite or PostgreSQL ledgers;
        a no-op otherwise), so that the first questions do not pay for it."""
        self.ledger.postings.prewarm()
        if self.settings.table_row_entries and self.ledger.row_keywords is not None:
            self.ledger.row_keywords.postings.prewarm()

    def delete(self, doc_id: str) -> bool:
        """Delete a document everywhere (and from its collections). Returns False when there was
        no such document."""
        existed = self.ledger.delete_document(doc_id)
        fault_point("delete.after_ledger")
        try:
            self.vectors.delete_document(doc_id)
        except Exception:
            logger.exception("deleting vectors of %s failed; run `rag doctor`", doc_id)
        return existed

    def delete_collection(
        self, tenant: str, name: str, *, delete_documents: bool = False
    ) -> tuple[list[str], list[str]]:
        """Remove a collection. Its documents stay, unless ``delete_documents``: then those in no
        other collection are deleted everywhere. Returns (documents in no other collection:
        deleted or kept, documents kept because another collection holds them)."""
        alone, elsewhere = self.collections.delete(tenant, name)
        if delete_documents:
            for doc_id in alone:
                self.delete(doc_id)
        return alone, elsewhere

    # ----- retrieval and answers (query.py) ----------------------------------------------------
    def retriever(
        self,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
        **overrides: Any,
    ) -> HybridRetriever:
        """A LlamaIndex retriever over this KB, scoped to a tenant (and optionally documents)."""
        return self.query.retriever(tenant, top_k, doc_ids, **overrides)

    def retrieve_nodes(
        self,
        question: str,
        top_k: int = 5,
        tenant: str = "default",
        doc_ids: Sequence[str] | None = None,
        *,
        collections: Sequence[str] | None = None,
        **overrides: Any,
    ) -> list[NodeWithScore]:
        scope = self.collections.scope(tenant, collections, doc_ids)
        return self.query.retrieve_nodes(Request.of(question, tenant, top_k, scope), **overrides)

    def retrieve(
        self,
        question: str,
        top_k: int = 5,
        tenant: str = "default",
        doc_ids: Sequence[str] | None = None,
        *,
        collections: Sequence[str] | None = None,
        **overrides: Any,
    ) -> list[Source]:
        """Hybrid retrieval (dense + BM25, fused) within a tenant (and ``collections``, by
        name, or ``doc_ids``); only active chunks."""
        scope = self.collections.scope(tenant, collections, doc_ids)
        return self.query.retrieve(Request.of(question, tenant, top_k, scope), **overrides)

    @property
    def engine(self) -> AnswerEngine:
        """The answer engine of this knowledge base (built on first use, then shared)."""
        return self.query.engine

    def ask(
        self,
        question: str,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
        *,
        collections: Sequence[str] | None = None,
        on_text: TextSink | None = None,
        collection_ids: Sequence[str] | None = None,
    ) -> Answer:
        """Answer with backend citations, or refuse (with the reason and the closest sources)
        when no unit of the evidence answers the question. ``collections`` (names) or
        ``doc_ids`` narrow what it reads (CollectionNotFound for an unknown name). ``on_text``
        receives an LLM answer's text as it is written (streaming; the Answer is what counts).
        A matching annotation of these collections (``collection_ids``, or those named; None:
        any) or of the whole tenant answers first (rag_app/annotations.py)."""
        scope = self.collections.scope(tenant, collections, doc_ids)
        request = Request.of(question, tenant, top_k, scope)
        ids = self.collections.ids(tenant, collections) if collections else collection_ids
        return self.annotations.ask(request, ids, lambda b: self.query.ask(request, on_text, b))

    # ----- maintenance (store/doctor.py) ------------------------------------------------------
    def doctor(
        self,
        repair: bool = True,
        *,
        sample: int = 200,
        rebuild_vectors: bool = False,
        min_recall: float = 0.99,
    ) -> dict[str, float]:
        """Reconcile the vector and keyword indexes with the ledger and check the vectors'
        self-recall (see store/doctor.py)."""
        return doctor.doctor(
            self.ledger,
            self.vectors,
            self._embedding,
            repair,
            sample=sample,
            rebuild_vectors=rebuild_vectors,
            min_recall=min_recall,
        )
