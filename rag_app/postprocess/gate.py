"""EvidenceGate: refuse when no unit of the evidence answers the question.

A thin node postprocessor over the :class:`~rag_app.answer.locator.AnswerLocator`: the locator
scores every sentence, list item and table row of the evidence with the fitted answer model and
decides (:meth:`EvidenceGate.decide`, a typed :class:`AnswerDecision`). As a postprocessor in a
plain LlamaIndex pipeline it orders the nodes by their best unit and, when the question is to be
refused, returns no nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import PrivateAttr

from rag_app.analysis.asked import AskedQuestion
from rag_app.answer.locator import AnswerDecision, AnswerLocator


class EvidenceGate(BaseNodePostprocessor):
    _locator: AnswerLocator = PrivateAttr()

    def __init__(self, locator: AnswerLocator, **data: Any) -> None:
        super().__init__(**data)
        self._locator = locator

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceGate"

    @property
    def locator(self) -> AnswerLocator:
        """The answer step that decides (built once per knowledge base)."""
        return self._locator

    @property
    def threshold(self) -> float:
        return self._locator.threshold

    def decide(
        self,
        question: str,
        nodes: Sequence[NodeWithScore],
        query_vector: Sequence[float] | None = None,
        asked: AskedQuestion | None = None,
    ) -> AnswerDecision:
        """``query_vector``: the question's vector from the knowledge base's embedding model,
        when retrieval computed one (the reading stage then embeds only the units); ``asked``:
        the question as the analysis stage read it (None: the locator reads it)."""
        return self._locator.locate(question, nodes, query_vector=query_vector, asked=asked)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None or not nodes:
            return nodes
        decision = self.decide(query_bundle.query_str, nodes)
        if decision.refused:
            return []
        best: dict[int, float] = {}
        for scored in decision.units:
            best.setdefault(scored.unit.source, scored.probability)
        order = sorted(range(len(nodes)), key=lambda i: -best.get(i + 1, 0.0))
        return [NodeWithScore(node=nodes[i].node, score=best.get(i + 1, 0.0)) for i in order]
