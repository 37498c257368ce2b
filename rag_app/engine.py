"""The answer path as a LlamaIndex query engine, built once per knowledge base:

QuestionAnalyzer → HybridRetriever → Reranker → NeighborExpansion → EvidenceGate (answer model)
→ CitationSynthesizer: analysis, retrieval, evidence, decision, synthesis, each once, in order.

Each stage returns a typed value: the evidence nodes, the gate's
:class:`~rag_app.answer.decision.AnswerDecision`, the synthesizer's
:class:`~rag_app.synthesis.citations.Synthesis`, together an :class:`AnswerResult`, which
``rag_app.query.answer_of`` turns into the public :class:`~rag_app.types.Answer`.
:meth:`AnswerEngine.answer` takes a :class:`~rag_app.retrieval.scope.Request` (the question and
its scope). The engine is also a LlamaIndex ``BaseQueryEngine``: ``engine.query("…")`` answers in
the engine's own scope (``with_scope`` binds a tenant). Its parts are built once and shared by
service threads; nothing per question is stored on them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import Response
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.question import QuestionAnalyzer
from rag_app.answer.cross_reader import CrossReader
from rag_app.answer.decision import AnswerDecision
from rag_app.answer.locator import AnswerLocator
from rag_app.answer.model import AnswerModel, bundled_model
from rag_app.answer.passage_scorer import PassageScorer, build_passage_scorer
from rag_app.config import Settings
from rag_app.llm_budget import llm_budget
from rag_app.postprocess.gate import EvidenceGate
from rag_app.postprocess.neighbors import NeighborExpansion
from rag_app.postprocess.rerank import CrossEncoderReranker, LexicalReranker
from rag_app.retrieval.hybrid import HybridRetriever
from rag_app.retrieval.scope import Request, Scope
from rag_app.retrieval.stats import TermStatistics
from rag_app.retrieval.timing import stage
from rag_app.store.protocols import RetrievalLedger
from rag_app.synthesis.citations import CitationSynthesizer, Synthesis, TextSink, build_llm

# (scope, top_k) -> a retriever within the scope
RetrieverFactory = Callable[[Scope, int], HybridRetriever]


@dataclass
class AnswerResult:
    """Typed output of one question: what was asked, on which evidence, what was decided, and
    the answer."""

    request: Request
    nodes: list[NodeWithScore]
    decision: AnswerDecision
    synthesis: Synthesis
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
        scope: Scope | None = None,
        analyzer: QuestionAnalyzer | None = None,
    ) -> None:
        """``scope``: where :meth:`query` looks (default: the default tenant); ``analyzer``: the
        analysis stage (default: the gate's own, one memo and one lexicon with the decision)."""
        super().__init__(callback_manager=None)
        self.scope = scope or Scope()
        self.retriever_factory = retriever_factory
        self.reranker = reranker
        self.neighbors = neighbors
        self.gate = gate
        self.synthesizer = synthesizer
        self.rerank_candidates = rerank_candidates
        self.analyzer = analyzer if analyzer is not None else gate.locator.analyzer

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def with_scope(self, scope: Scope) -> AnswerEngine:
        """The same engine (its parts shared) answering :meth:`query` within ``scope``."""
        return AnswerEngine(
            retriever_factory=self.retriever_factory, reranker=self.reranker,
            neighbors=self.neighbors, gate=self.gate, synthesizer=self.synthesizer,
            rerank_candidates=self.rerank_candidates, scope=scope, analyzer=self.analyzer,
        )  # fmt: skip

    def evidence(self, request: Request, bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        """Retrieve, rerank to ``top_k`` and expand neighbours: what the gate reads. ``bundle``:
        the question's bundle, to which the dense retrieval leaves the question's vector."""
        bundle = QueryBundle(request.question) if bundle is None else bundle
        retriever = self.retriever_factory(
            request.scope, max(request.top_k, self.rerank_candidates)
        )
        nodes = retriever.retrieve(bundle)
        with stage("rerank"):
            if self.reranker is not None:
                nodes = self.reranker.postprocess_nodes(nodes, query_bundle=bundle)
            nodes = nodes[: request.top_k]
        with stage("neighbors"):
            return self.neighbors.postprocess_nodes(nodes, query_bundle=bundle)

    def answer(
        self,
        request: Request,
        on_text: TextSink | None = None,
        bundle: QueryBundle | None = None,
    ) -> AnswerResult:
        """Evidence, decision and answer for one question within its scope (``on_text``: an
        LLM answer's text as it is written, see CitationSynthesizer.synthesize; ``bundle``: the
        question's, with its vector when already computed)."""
        question = request.question
        t0 = time.perf_counter()
        with llm_budget(self.synthesizer.budget):  # from here (a chat turn's: from its start)
            asked = self.analyzer.asked(question)  # the question read once, first
            analysed = time.perf_counter() - t0  # counted in gate_ms, as when the gate read it
            bundle = QueryBundle(question) if bundle is None else bundle
            nodes = self.evidence(request, bundle=bundle)
            t1 = time.perf_counter()
            with stage("gate"):  # the reading stage reuses the question's vector from retrieval
                decision = self.gate.decide(
                    question, nodes, query_vector=bundle.embedding, asked=asked
                )
            t2 = time.perf_counter()
            with stage("synthesis"):
                synthesis = self.synthesizer.synthesize(
                    question, nodes, decision=decision, on_text=on_text
                )
            t3 = time.perf_counter()
        timings = {
            "retrieve_ms": (t1 - t0 - analysed) * 1000,
            "gate_ms": (t2 - t1 + analysed) * 1000,
            "synthesize_ms": (t3 - t2) * 1000,
            "total_ms": (t3 - t0) * 1000,
        }
        return AnswerResult(request, nodes, decision, synthesis, timings)

    def _query(self, query_bundle: QueryBundle) -> Response:
        """LlamaIndex's entry: the answer within the engine's scope, as a ``Response`` whose
        metadata holds the typed result (``result``)."""
        result = self.answer(Request(query_bundle.query_str, self.scope))
        s = result.synthesis
        return Response(s.text, source_nodes=s.sources, metadata={"result": result})

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


def build_cross_reader(
    settings: Settings, embed_model: BaseEmbedding, reader: PassageScorer | None
) -> CrossReader | None:
    """The cross reader over the e5 weights already loaded (the knowledge base's embedding or
    the reading stage's), else over a new e5; None when ``RAG_CROSS_READER`` is off."""
    if not settings.cross_reader:
        return None
    from rag_app.embeddings import E5Embedding, load_embedding

    for model in (embed_model, reader.embed_model if reader is not None else None):
        if isinstance(model, E5Embedding):
            return CrossReader(model.engine, settings.cross_reader_path)
    e5 = load_embedding(
        "e5",
        threads=settings.embed_threads,
        e5_engine=settings.e5_engine,
        cache_dir=settings.cache_dir,
    )
    return CrossReader(e5.engine, settings.cross_reader_path)  # type: ignore[attr-defined]


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
        build_passage_scorer(
            model.reading.reader,
            threads=settings.embed_threads,
            embed_model=embed_model,
            measure=model.reading.measure,
            e5_engine=settings.e5_engine,
            cache_dir=settings.cache_dir,
        )
        if model.reading is not None and settings.reading
        else None
    )
    cross = build_cross_reader(settings, embed_model, reader)
    qualify = settings.qualify_below
    if qualify is None:
        qualify = cross.threshold if cross is not None else 0.0
    locator = AnswerLocator(
        model, analyzer, stats, embed_model, threshold=gate_threshold(settings, model),
        reader=reader, cross_reader=cross, qualify_below=qualify,
        qualify_confidence=settings.qualify_confidence,
    )  # fmt: skip
    llm = None
    if settings.llm_base_url:
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        timeout = min(settings.llm_timeout, settings.llm_budget)  # an abandoned call ends too
        llm = build_llm(settings.llm_base_url, settings.llm_model, key, timeout=timeout)
    return AnswerEngine(
        retriever_factory=retriever_factory,
        reranker=build_reranker(settings, ledger, stats, settings.rerank_candidates),
        neighbors=NeighborExpansion(
            ledger, mode=settings.neighbors, context_budget=settings.context_budget
        ),
        gate=EvidenceGate(locator),
        synthesizer=CitationSynthesizer(
            locator=locator,
            llm=llm,
            review_floor=review_floor(settings, model),
            budget=settings.llm_budget,
        ),
        rerank_candidates=settings.rerank_candidates,
    )
