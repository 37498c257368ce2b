"""The answer path as a LlamaIndex query engine, built once per knowledge base:

HybridRetriever → Reranker → NeighborExpansion → EvidenceGate (answer model) → CitationSynthesizer.

:class:`AnswerEngine` is a ``BaseQueryEngine`` (``engine.query("…")`` works like any LlamaIndex
engine, in the default tenant); :meth:`AnswerEngine.answer` takes the scope per question and
returns a typed :class:`AnswerResult` (the decision, the evidence, the response, timings). Its
parts are built once and shared by service threads; nothing per question is stored on them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import Response
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.question import QuestionAnalyzer
from rag_app.answer.locator import AnswerDecision, AnswerLocator
from rag_app.answer.model import AnswerModel, bundled_model
from rag_app.answer.reader import build_reader
from rag_app.config import Settings
from rag_app.postprocess.gate import EvidenceGate
from rag_app.postprocess.neighbors import NeighborExpansion
from rag_app.postprocess.rerank import CrossEncoderReranker, LexicalReranker
from rag_app.retrieval.hybrid import HybridRetriever
from rag_app.retrieval.stats import TermStatistics
from rag_app.retrieval.timing import stage
from rag_app.store.protocols import RetrievalLedger
from rag_app.synthesis.citations import CitationSynthesizer, build_llm

# (tenant, top_k, doc_ids) -> a retriever scoped to them
RetrieverFactory = Callable[[str, int, Sequence[str] | None], HybridRetriever]


@dataclass
class AnswerResult:
    """Typed output of one question: what was decided, on which evidence, and the answer."""

    decision: AnswerDecision
    nodes: list[NodeWithScore]
    response: Response
    timings: dict[str, float] = field(default_factory=dict)


def build_reranker(
    settings: Settings, ledger: RetrievalLedger, stats: TermStatistics, top_n: int
) -> BaseNodePostprocessor | None:
    spec = settings.rerank.strip()
    if spec == "none":
        return None
    if spec == "lexical":
        return LexicalReranker(ledger=ledger, stats=stats, top_n=top_n)
    if spec.startswith("hf:"):
        return CrossEncoderReranker(model_path=spec[3:], top_n=top_n)
    raise ValueError(f"unknown reranker {spec!r}: use lexical, none or hf:<local dir>")


def gate_threshold(settings: Settings, model: AnswerModel) -> float:
    if settings.gate_threshold is not None:
        return settings.gate_threshold
    return model.threshold(settings.gate)


class AnswerEngine(BaseQueryEngine):
    def __init__(
        self,
        *,
        retriever_factory: RetrieverFactory,
        reranker: BaseNodePostprocessor | None,
        neighbors: NeighborExpansion,
        gate: EvidenceGate,
        synthesizer: CitationSynthesizer,
        rerank_candidates: int = 20,
    ) -> None:
        super().__init__(callback_manager=None)
        self.retriever_factory = retriever_factory
        self.reranker = reranker
        self.neighbors = neighbors
        self.gate = gate
        self.synthesizer = synthesizer
        self.rerank_candidates = rerank_candidates

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def evidence(
        self,
        question: str,
        *,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
        bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        """Retrieve, rerank to ``top_k`` and expand neighbours: what the gate reads. ``bundle``:
        the question's bundle, to which the dense retrieval leaves the question's vector."""
        bundle = QueryBundle(question) if bundle is None else bundle
        retriever = self.retriever_factory(tenant, max(top_k, self.rerank_candidates), doc_ids)
        nodes = retriever.retrieve(bundle)
        with stage("rerank"):
            if self.reranker is not None:
                nodes = self.reranker.postprocess_nodes(nodes, query_bundle=bundle)
            nodes = nodes[:top_k]
        with stage("neighbors"):
            return self.neighbors.postprocess_nodes(nodes, query_bundle=bundle)

    def answer(
        self,
        question: str,
        *,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
    ) -> AnswerResult:
        question = question.strip()
        if not question:
            raise ValueError("question is empty")
        t0 = time.perf_counter()
        bundle = QueryBundle(question)
        nodes = self.evidence(question, tenant=tenant, top_k=top_k, doc_ids=doc_ids, bundle=bundle)
        t1 = time.perf_counter()
        with stage("gate"):  # the reading stage reuses the question's vector from retrieval
            decision = self.gate.decide(question, nodes, query_vector=bundle.embedding)
        t2 = time.perf_counter()
        with stage("synthesis"):
            response = self.synthesizer.synthesize(question, nodes, decision=decision)
        t3 = time.perf_counter()
        timings = {
            "retrieve_ms": (t1 - t0) * 1000,
            "gate_ms": (t2 - t1) * 1000,
            "synthesize_ms": (t3 - t2) * 1000,
            "total_ms": (t3 - t0) * 1000,
        }
        return AnswerResult(decision, nodes, response, timings)

    def _query(self, query_bundle: QueryBundle) -> Response:
        return self.answer(query_bundle.query_str).response

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        return self._query(query_bundle)


def review_floor(settings: Settings, model: AnswerModel) -> float | None:
    """The confidence from which an LLM reads a gate refusal (``llm_review``); None: never
    (off, or no LLM)."""
    if not settings.llm_base_url or settings.llm_review == "off":
        return None
    if settings.llm_review in model.thresholds:
        return model.threshold(settings.llm_review)
    return float(settings.llm_review)


def build_answer_engine(
    settings: Settings,
    ledger: RetrievalLedger,
    embed_model: BaseEmbedding,
    retriever_factory: RetrieverFactory,
    stats: TermStatistics,
) -> AnswerEngine:
    """The engine of one knowledge base, from its settings and stores (built once)."""
    model = AnswerModel.load(settings.answer_model or bundled_model(settings.reader))
    analyzer = QuestionAnalyzer(Lexicon.load(settings.lexicon) if settings.lexicon else None)
    reader = (
        build_reader(
            model.reading.reader,
            threads=settings.embed_threads,
            embed_model=embed_model,
            measure=model.reading.measure,
        )
        if model.reading is not None and settings.reading
        else None
    )
    locator = AnswerLocator(
        model, analyzer, stats, embed_model, threshold=gate_threshold(settings, model),
        reader=reader,
    )  # fmt: skip
    llm = None
    if settings.llm_base_url:
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        llm = build_llm(
            settings.llm_base_url, settings.llm_model, key, timeout=settings.llm_timeout
        )
    return AnswerEngine(
        retriever_factory=retriever_factory,
        reranker=build_reranker(settings, ledger, stats, settings.rerank_candidates),
        neighbors=NeighborExpansion(
            ledger, mode=settings.neighbors, context_budget=settings.context_budget
        ),
        gate=EvidenceGate(locator),
        synthesizer=CitationSynthesizer(
            locator=locator, llm=llm, review_floor=review_floor(settings, model)
        ),
        rerank_candidates=settings.rerank_candidates,
    )
