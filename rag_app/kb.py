"""The KnowledgeBase facade: open, ingest, retrieve, ask, doctor; its parts do the rest.

A knowledge base is one directory (or a ledger URL and a Chroma server) and a few components,
each with one job: the ledger (store/ledger.py, the source of truth) and the vector store
(store/vectors.py); ingestion (ingestion/service.py); retrieval and answering (query.py); the
crash repair (store/doctor.py). This class opens and closes them, loads the embedding model once
(on first use) for both sides, and exposes them as parts: ``kb.documents`` (list, get, chunks,
delete), ``kb.collections``, ``kb.feedback``, ``kb.annotations``, ``kb.chat``, ``kb.ingestion``
(``ingest_one``, ``pipeline``), ``kb.query`` (``engine``) and ``kb.serving`` (API keys, the job
queue, prewarming; rag_app/kb_parts.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore

from rag_app.analysis.followup_llm import LLMFollowUpRewriter
from rag_app.annotations import AnnotationService
from rag_app.chat import ChatService
from rag_app.config import Settings
from rag_app.embeddings import load_embedding
from rag_app.ingestion.service import IngestionService, ProgressCallback
from rag_app.kb_parts import Documents, KnowledgeBaseError, Serving, open_stores
from rag_app.query import QueryService
from rag_app.retrieval.hybrid import HybridRetriever
from rag_app.retrieval.scope import Request, Scope
from rag_app.retrieval.stats import TermStatistics
from rag_app.store import doctor
from rag_app.store.annotations import AnnotationStore
from rag_app.store.collections import CollectionStore
from rag_app.store.conversations import ConversationStore
from rag_app.store.feedback import FeedbackStore
from rag_app.store.writer_lock import WriterLock
from rag_app.synthesis.citations import TextSink
from rag_app.types import Answer, IngestReport, Source

__all__ = ["KnowledgeBase", "KnowledgeBaseError", "ProgressCallback"]


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
            self.ledger, self.vectors = open_stores(settings, read_only=read_only)
        except BaseException:
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
        self.documents = Documents(self.ledger, self.vectors)
        self.serving = Serving(self.ledger, settings)

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

    # ----- ingestion (ingestion/service.py) ---------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        tenant: str = "default",
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively). Bad files fail alone; the rest still ingest."""
        return self.ingestion.ingest(paths, tenant, progress)

    # ----- retrieval and answers (query.py) ----------------------------------------------------
    def answer_settings(self) -> dict[str, Any]:
        """What answers with this knowledge base (kept with feedback): the embedding, the gate and
        its threshold, the reader, whether an LLM writes the answers."""
        s = self.settings
        return {"embedding": s.embedding, "gate": s.gate, "gate_threshold": s.gate_threshold,
                "reader": s.reader, "llm": s.llm_base_url is not None}  # fmt: skip

    def retriever(
        self,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
        **overrides: Any,
    ) -> HybridRetriever:
        """A LlamaIndex retriever over this KB, scoped to a tenant (and optionally documents)."""
        return self.query.retriever(Scope.of(tenant, doc_ids), top_k, **overrides)

    def request(
        self,
        question: str,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
    ) -> Request:
        """The question and where it may look, built once and passed whole: the tenant's
        documents of ``collections`` (names; CollectionNotFound for an unknown one) within
        ``doc_ids`` when given."""
        visible_doc_ids = self.collections.scope(tenant, collections, doc_ids)
        return Request.of(question, tenant, top_k, visible_doc_ids)

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
        request = self.request(question, tenant, top_k, doc_ids, collections)
        return self.query.retrieve_nodes(request, **overrides)

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
        request = self.request(question, tenant, top_k, doc_ids, collections)
        return self.query.retrieve(request, **overrides)

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
        request = self.request(question, tenant, top_k, doc_ids, collections)
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
