"""CitationSynthesizer: answers whose ``[n]`` markers point at backend sources.

It answers from the answer step's :class:`~rag_app.answer.locator.AnswerDecision` (the evidence
cut into units and scored by the fitted answer model). A refused decision gives the refusal, its
reason in words, and the closest sources. Extractive mode (default, no model): the best unit
first, then at most two supporting units (:func:`~rag_app.synthesis.extractive.compose`). LLM
mode: an OpenAI-compatible chat endpoint answers from the numbered evidence, the best units
listed first; markers it invents (numbers without a source) are removed. Either way the sources
come from the retrieval backend, never from model text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM, ChatMessage, MessageRole
from llama_index.core.llms.mock import MockLLM
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_app.answer.locator import AnswerDecision, AnswerLocator
from rag_app.synthesis.extractive import citation_of, compose
from rag_app.synthesis.prompts import SYSTEM_PROMPT, USER_TEMPLATE, format_evidence
from rag_app.types import REFUSAL, Citation

logger = logging.getLogger(__name__)

_MARKER = re.compile(r"\[(\d{1,3})\]")
CLOSEST_SOURCES = 3  # sources a refusal still returns
KEY_UNITS = 3  # best units listed first for the LLM


def clean_markers(text: str, n_sources: int) -> tuple[str, list[int]]:
    """Drop ``[k]`` markers that point at no source; return the text and the markers kept."""
    kept: list[int] = []

    def keep(match: re.Match[str]) -> str:
        k = int(match.group(1))
        if 1 <= k <= n_sources:
            kept.append(k)
            return match.group(0)
        return ""

    return _MARKER.sub(keep, text).strip(), kept


def build_llm(base_url: str, model: str, api_key: str | None, timeout: float = 60.0) -> LLM:
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=model,
        api_base=base_url,
        api_key=api_key or "not-needed",
        is_chat_model=True,
        temperature=0.0,
        timeout=timeout,
        max_retries=1,
        context_window=16000,
    )


def refusal(
    decision: AnswerDecision, nodes: Sequence[NodeWithScore], *, reviewed: bool = False
) -> Response:
    """The refusal with its reason, the closest sources (best unit's node first) and the best
    unit itself (``closest``, cited in them: the nearest the evidence has to an answer);
    ``reviewed``: the LLM read it first (``RAG_LLM_REVIEW``) and let it stand."""
    order: list[int] = []
    for scored in decision.units:
        if scored.unit.source not in order:
            order.append(scored.unit.source)
    order += [i for i in range(1, len(nodes) + 1) if i not in order]
    closest = [nodes[i - 1] for i in order[:CLOSEST_SOURCES]]
    meta = {
        "refused": True,
        "reason": decision.reason,
        "explanation": decision.explanation,
        "decision": decision,
        "mode": "gate",
        "closest": closest_units(decision, order),
        "reviewed": reviewed,
    }
    return Response(REFUSAL, source_nodes=closest, metadata=meta)


def closest_units(decision: AnswerDecision, order: Sequence[int]) -> list[Citation]:
    """The decision's best unit, cited by its node's place in ``order`` (the node numbers as
    the sources are listed); none without units, nor when the question names something no
    passage mentions (``entity_missing``: no unit can be about it, "Docker 镜像的名称" quoted
    an error-code row)."""
    if not decision.units or decision.reason == "entity_missing":
        return []
    best = citation_of(decision.units[0])
    return [best.model_copy(update={"source": list(order).index(best.source) + 1})]


class CitationSynthesizer(BaseSynthesizer):
    """Builds an answer with ``[n]`` markers from evidence nodes (n = position, 1-based)."""

    def __init__(
        self, *, locator: AnswerLocator, llm: LLM | None = None, review_floor: float | None = None
    ) -> None:
        """``review_floor``: with an LLM, the gate's refusals whose confidence reaches it are
        read by the LLM, which answers or lets the refusal stand (None: never)."""
        super().__init__(llm=llm or MockLLM())
        self._locator = locator
        self.use_llm = llm is not None
        self.review_floor = review_floor if llm is not None else None

    def reviews(self, decision: AnswerDecision) -> bool:
        """Whether the LLM reads this refusal: its confidence reaches the floor, and some
        passage mentions what the question names (an ``entity_missing`` refusal has no
        evidence on its subject for the LLM to read)."""
        return (
            self.review_floor is not None
            and decision.refused
            and decision.reason != "entity_missing"
            and bool(decision.units)
            and decision.best >= self.review_floor
        )

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        return None

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise NotImplementedError("CitationSynthesizer works on nodes: call synthesize()")

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise NotImplementedError("CitationSynthesizer works on nodes: call synthesize()")

    def synthesize(  # type: ignore[override]
        self,
        query: QueryBundle | str,
        nodes: list[NodeWithScore],
        additional_source_nodes: Sequence[NodeWithScore] | None = None,
        decision: AnswerDecision | None = None,
        **kwargs: Any,
    ) -> Response:
        """``decision``: the answer step's decision on these nodes (computed when absent)."""
        question = query.query_str if isinstance(query, QueryBundle) else query
        if decision is None:
            decision = self._locator.locate(question, nodes)
        if nodes and self.reviews(decision):
            return self._llm_answer(question, nodes, decision, reviewed=True)
        if decision.refused or not nodes:
            return refusal(decision, nodes)
        if self.use_llm:
            return self._llm_answer(question, nodes, decision)
        text, citations = compose(decision, self._locator.analyzer.lexicon)
        meta: dict[str, Any] = {
            "refused": False, "mode": "extractive", "citations": citations, "decision": decision,
        }  # fmt: skip
        return Response(text, source_nodes=list(nodes), metadata=meta)

    def _llm_answer(
        self,
        question: str,
        nodes: list[NodeWithScore],
        decision: AnswerDecision,
        *,
        reviewed: bool = False,
    ) -> Response:
        """The LLM's answer from the numbered evidence; ``reviewed``: the gate refused (the
        LLM reads it, :meth:`reviews`), so a refusal by the LLM is the gate's refusal."""
        top = decision.units[:KEY_UNITS]  # and each question's own of a compound question
        top += [p for p in decision.parts if all(p.unit.text != s.unit.text for s in top)]
        lead = "\n".join(f"[{s.unit.source}] {s.unit.text}" for s in top)
        evidence = format_evidence(
            [
                (i, str(n.node.metadata.get("title_path", "")), n.node.get_content())
                for i, n in enumerate(nodes, start=1)
            ]
        )
        if lead:
            evidence = f"（最相关的句子）\n{lead}\n\n{evidence}"
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM_PROMPT),
            ChatMessage(
                role=MessageRole.USER,
                content=USER_TEMPLATE.format(evidence=evidence, question=question),
            ),
        ]
        reply = self._llm.chat(messages)
        text = (reply.message.content or "").strip()
        cleaned, kept = clean_markers(text, len(nodes))
        refused = not cleaned or REFUSAL.rstrip("。") in cleaned
        citations = [citation_of(s) for s in top if s.unit.source in kept]
        if reviewed and (refused or not kept):  # an answer citing nothing does not overrule it
            return refusal(decision, nodes, reviewed=True)
        meta: dict[str, Any] = {
            "refused": refused, "mode": "llm", "markers": kept, "citations": citations,
            "decision": decision, "reviewed": reviewed,
        }  # fmt: skip
        if refused:
            meta["reason"] = "llm_refused"
            meta["explanation"] = "模型认为资料不足以回答。"
            meta["closest"] = closest_units(decision, range(1, len(nodes) + 1))
            return Response(REFUSAL, source_nodes=list(nodes), metadata=meta)
        return Response(cleaned, source_nodes=list(nodes), metadata=meta)
