"""The answer path as a LlamaIndex ``RetrieverQueryEngine``:

HybridRetriever → Reranker → EvidenceGate → NeighborExpansion → CitationSynthesizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine

from rag_app.postprocess.gate import EvidenceGate
from rag_app.postprocess.neighbors import NeighborExpansion
from rag_app.postprocess.rerank import CrossEncoderReranker, LexicalReranker, QuestionWeights
from rag_app.retrieval.hybrid import HybridRetriever
from rag_app.synthesis.citations import CitationSynthesizer, build_llm

if TYPE_CHECKING:
    from rag_app.kb import KnowledgeBase


# stage names (rag_app.retrieval.timing) of the postprocessors, for per-stage timings
STAGE_NAMES = {
    "LexicalReranker": "rerank",
    "CrossEncoderReranker": "rerank",
    "TopN": "rerank",
    "EvidenceGate": "gate",
    "NeighborExpansion": "neighbors",
}


@dataclass
class EngineParts:
    engine: RetrieverQueryEngine
    retriever: HybridRetriever
    reranker: BaseNodePostprocessor | None
    gate: EvidenceGate | None
    neighbors: NeighborExpansion
    synthesizer: CitationSynthesizer


def build_reranker(
    kb: KnowledgeBase, top_n: int, weights: QuestionWeights | None = None
) -> BaseNodePostprocessor | None:
    spec = kb.settings.rerank.strip()
    if spec == "none":
        return None
    if spec == "lexical":
        return LexicalReranker(ledger=kb.ledger, top_n=top_n, weights=weights)
    if spec.startswith("hf:"):
        return CrossEncoderReranker(model_path=spec[3:], top_n=top_n)
    raise ValueError(f"unknown reranker {spec!r}: use lexical, none or hf:<local dir>")


def build_query_engine(
    kb: KnowledgeBase,
    tenant: str = "default",
    top_k: int = 5,
    doc_ids: Sequence[str] | None = None,
) -> EngineParts:
    s = kb.settings
    retriever = kb.retriever(tenant, max(top_k, s.rerank_candidates), doc_ids)
    weights = QuestionWeights(kb.ledger)  # the question's IDF, once for reranker and synthesizer
    reranker = build_reranker(kb, top_k, weights)
    gate = (
        EvidenceGate(
            ledger=kb.ledger,
            min_head_coverage=s.gate_min_head_coverage,
            min_attribute_coverage=s.gate_min_attribute_coverage,
            min_question_coverage=s.gate_min_question_coverage,
            lookup=s.gate_lookup,
            tenant=tenant,
            doc_ids=list(doc_ids) if doc_ids is not None else None,
        )
        if s.gate
        else None
    )
    neighbors = NeighborExpansion(kb.ledger, mode=s.neighbors, context_budget=s.context_budget)
    llm = None
    if s.llm_base_url:
        key = s.llm_api_key.get_secret_value() if s.llm_api_key else None
        llm = build_llm(s.llm_base_url, s.llm_model, key, timeout=s.llm_timeout)
    synthesizer = CitationSynthesizer(ledger=kb.ledger, llm=llm, weights=weights)
    postprocessors: list[BaseNodePostprocessor] = []
    if reranker is None:
        postprocessors.append(_TopN(top_n=top_k))
    else:
        postprocessors.append(reranker)
    if gate is not None:
        postprocessors.append(gate)
    postprocessors.append(neighbors)
    engine = RetrieverQueryEngine(
        retriever=retriever, response_synthesizer=synthesizer, node_postprocessors=postprocessors
    )
    return EngineParts(engine, retriever, reranker, gate, neighbors, synthesizer)


class _TopN(BaseNodePostprocessor):
    top_n: int = 5

    @classmethod
    def class_name(cls) -> str:
        return "TopN"

    def _postprocess_nodes(self, nodes, query_bundle=None):  # type: ignore[no-untyped-def]
        return nodes[: self.top_n]
