"""The query side of a knowledge base, built once per KB from its settings, ledger, vector store
and embedding: scoped hybrid retrievers, and the answer engine (engine.py) that answers or refuses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_app.config import Settings
from rag_app.engine import AnswerEngine, AnswerResult, build_answer_engine
from rag_app.retrieval.hybrid import HybridRetriever
from rag_app.retrieval.prf import feedback_params
from rag_app.retrieval.record import record_of
from rag_app.retrieval.scope import Request, Scope
from rag_app.retrieval.stats import TermStatistics
from rag_app.store.protocols import RetrievalLedger
from rag_app.store.vectors import VectorStore
from rag_app.synthesis.citations import TextSink
from rag_app.types import REFUSAL, Answer, Source


def node_to_source(node: NodeWithScore) -> Source:
    """A retrieved node as a citation-ready ``Source`` (fields from the ledger, not a model)."""
    score = round(float(node.score or 0.0), 6)
    return record_of(node.node).to_source(node.node.get_content(), score)


class QueryService:
    """Retrieval and answering over one knowledge base (see the module docstring).

    ``embed_model`` is called when a question first needs it (the knowledge base loads its model
    lazily and shares it with ingestion).
    """

    def __init__(
        self,
        settings: Settings,
        ledger: RetrievalLedger,
        vectors: VectorStore,
        embed_model: Callable[[], BaseEmbedding],
        stats: TermStatistics,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.vectors = vectors
        self._embed_model = embed_model
        self.stats = stats
        self._engine: AnswerEngine | None = None
        self._engine_lock = threading.Lock()

    def retriever(self, scope: Scope, top_k: int = 5, **overrides: Any) -> HybridRetriever:
        """A LlamaIndex retriever over the KB, within ``scope`` (a tenant, optionally documents)."""
        s = self.settings
        params: dict[str, Any] = {
            "mode": s.retrieval_mode,
            "fusion": s.fusion,
            "rrf_k": s.rrf_k,
            "dense_weight": s.fusion_dense_weight,
            "keyword_weight": s.keyword_weight,
            "candidates": max(s.candidates, top_k),
            "keyword_posting_budget": s.keyword_posting_budget,
            **feedback_params(s),
            "row_weight": s.row_weight if s.table_row_entries else 0.0,
        }
        params.update(overrides)
        return HybridRetriever(
            ledger=self.ledger,
            vectors=self.vectors,
            embed_model=self._embed_model(),
            scope=scope,
            top_k=top_k,
            stats=self.stats,
            **params,
        )

    def retrieve_nodes(self, request: Request, **overrides: Any) -> list[NodeWithScore]:
        return self.retriever(request.scope, request.top_k, **overrides).retrieve(request.question)

    def retrieve(self, request: Request, **overrides: Any) -> list[Source]:
        """Hybrid retrieval (dense + BM25, fused) within a tenant; only active chunks."""
        return [node_to_source(n) for n in self.retrieve_nodes(request, **overrides)]

    @property
    def engine(self) -> AnswerEngine:
        """The answer engine of the knowledge base (built on first use, then shared)."""
        if self._engine is None:
            with self._engine_lock:
                if self._engine is None:
                    self._engine = build_answer_engine(
                        self.settings,
                        self.ledger,
                        self._embed_model(),
                        self.retriever,
                        self.stats,
                    )
        return self._engine

    def ask(
        self, request: Request, on_text: TextSink | None = None, bundle: QueryBundle | None = None
    ) -> Answer:
        """Answer with backend citations, or refuse (with the reason and the closest sources)
        when no unit of the evidence answers the question (``on_text``: an LLM answer's text
        as it is written; ``bundle``: the question's, its vector computed or not)."""
        return answer_of(self.engine.answer(request, on_text, bundle))


def answer_of(result: AnswerResult) -> Answer:
    """The public answer of one engine result (typed stages in, one typed value out)."""
    s, decision = result.synthesis, result.decision
    refused = s.refused
    return Answer(
        question=result.request.question,
        answer=s.text or REFUSAL,
        refused=refused,
        outcome="refused" if refused else decision.outcome,
        caveat=None if refused else decision.caveat,
        reading=decision.reading,
        reason=s.reason if refused else None,
        explanation=s.explanation if refused else None,
        absent_values=[] if refused else list(decision.absent_values),
        absent_names=[] if refused else list(decision.absent_names),
        sources=[node_to_source(n) for n in s.sources],
        citations=s.citations,
        closest=s.closest if refused else [],
        confidence=decision.best,
        threshold=decision.threshold,
        mode=s.mode,
        reviewed=s.reviewed,
        llm_error=s.llm_error,
        timings={k: round(v, 2) for k, v in result.timings.items()},
    )
