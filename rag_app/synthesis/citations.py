"""CitationSynthesizer: answers whose ``[n]`` markers point at backend sources.

It answers from the answer step's :class:`~rag_app.answer.decision.AnswerDecision` (the evidence
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
from collections.abc import Callable, Sequence

from llama_index.core.llms import LLM, ChatMessage, MessageRole
from llama_index.core.schema import NodeWithScore
from pydantic import BaseModel, ConfigDict, Field

from rag_app.answer.decision import AnswerDecision
from rag_app.answer.locator import AnswerLocator
from rag_app.llm import build_llm as build_llm  # re-exported: the engine builds its LLM here
from rag_app.llm import describe
from rag_app.llm_budget import DEFAULT_BUDGET, call_llm, llm_budget
from rag_app.retrieval.record import record_of
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


# receives an answer's text as it is written (streaming)
TextSink = Callable[[str], None]


class Synthesis(BaseModel):
    """Typed output of the synthesizer: the answer text, how it was made, what it cites."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str
    mode: str = Field(description="extractive | llm | gate (a refusal by the gate)")
    refused: bool = False
    reason: str | None = None
    explanation: str | None = None
    sources: list[NodeWithScore] = Field(
        default_factory=list, description="The nodes [n] refers to; a refusal's closest ones."
    )
    citations: list[Citation] = Field(default_factory=list)
    closest: list[Citation] = Field(default_factory=list)
    reviewed: bool = False
    llm_error: str | None = Field(
        None, description="Why the LLM's answer was not used (the extractive one was instead)."
    )


def refusal(
    decision: AnswerDecision, nodes: Sequence[NodeWithScore], *, reviewed: bool = False
) -> Synthesis:
    """The refusal with its reason, the closest sources (best unit's node first) and the best
    unit itself (``closest``, cited in them: the nearest the evidence has to an answer);
    ``reviewed``: the LLM read it first (``RAG_LLM_REVIEW``) and let it stand."""
    order: list[int] = []
    for scored in decision.units:
        if scored.unit.source not in order:
            order.append(scored.unit.source)
    order += [i for i in range(1, len(nodes) + 1) if i not in order]
    return Synthesis(
        text=REFUSAL, mode="gate", refused=True, reason=decision.reason,
        explanation=decision.explanation, sources=[nodes[i - 1] for i in order[:CLOSEST_SOURCES]],
        closest=closest_units(decision, order), reviewed=reviewed,
    )  # fmt: skip


def closest_units(decision: AnswerDecision, order: Sequence[int]) -> list[Citation]:
    """The decision's best unit, cited by its node's place in ``order`` (the node numbers as
    the sources are listed); none without units, nor when the question names something no
    passage mentions (``entity_missing``: no unit can be about it, "Docker 镜像的名称" quoted
    an error-code row)."""
    if not decision.units or decision.reason == "entity_missing":
        return []
    best = citation_of(decision.units[0])
    return [best.model_copy(update={"source": list(order).index(best.source) + 1})]


class CitationSynthesizer:
    """Builds an answer with ``[n]`` markers from evidence nodes (n = position, 1-based) and
    the answer step's decision on them. Not a LlamaIndex ``BaseSynthesizer``: it answers from
    a decision over nodes, not from text chunks, and returns a typed :class:`Synthesis`."""

    def __init__(
        self,
        *,
        locator: AnswerLocator,
        llm: LLM | None = None,
        review_floor: float | None = None,
        budget: float = DEFAULT_BUDGET,
    ) -> None:
        """``review_floor``: with an LLM, the gate's refusals whose confidence reaches it are
        read by the LLM, which answers or lets the refusal stand (None: never). ``budget``:
        seconds an answer may wait on the LLM in all (``RAG_LLM_BUDGET``), streaming
        included; then the extractive answer is given."""
        self._locator = locator
        self.llm = llm
        self.budget = budget
        self.review_floor = review_floor if llm is not None else None

    @property
    def use_llm(self) -> bool:
        return self.llm is not None

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

    def synthesize(
        self,
        question: str,
        nodes: list[NodeWithScore],
        decision: AnswerDecision | None = None,
        on_text: TextSink | None = None,
    ) -> Synthesis:
        """``decision``: the answer step's decision on these nodes (computed when absent).
        ``on_text``: receives an LLM answer's text as it is written (the caveat line first;
        never the text of a refusal the LLM reviews, which may still stand). The returned
        :class:`Synthesis` is what counts: its text may differ (invented markers removed, an
        extractive fallback)."""
        if decision is None:
            decision = self._locator.locate(question, nodes)
        if nodes and self.reviews(decision):
            return self._llm_answer(question, nodes, decision, reviewed=True)
        if decision.refused or not nodes:
            return refusal(decision, nodes)
        if self.use_llm:
            return self._llm_answer(question, nodes, decision, on_text=on_text)
        return self._extractive(decision, nodes)

    def _extractive(
        self, decision: AnswerDecision, nodes: list[NodeWithScore], llm_error: str | None = None
    ) -> Synthesis:
        text, citations = compose(decision, self._locator.analyzer.lexicon)
        return Synthesis(text=text, mode="extractive", sources=list(nodes), citations=citations,
                         llm_error=llm_error)  # fmt: skip

    def _fallback(
        self, decision: AnswerDecision, nodes: list[NodeWithScore], error: str, reviewed: bool
    ) -> Synthesis:
        """What stands when the LLM fails: the gate's refusal for a refusal it was to read,
        else the extractive answer; ``llm_error`` says why."""
        logger.warning("LLM answer not used: %s", error)
        if reviewed:
            return refusal(decision, nodes, reviewed=False).model_copy(update={"llm_error": error})
        return self._extractive(decision, nodes, error)

    def _llm_answer(
        self,
        question: str,
        nodes: list[NodeWithScore],
        decision: AnswerDecision,
        *,
        reviewed: bool = False,
        on_text: TextSink | None = None,
    ) -> Synthesis:
        """The LLM's answer from the numbered evidence; ``reviewed``: the gate refused (the
        LLM reads it, :meth:`reviews`), so a refusal by the LLM is the gate's refusal.
        ``on_text``: the reply streamed as it comes (after the caveat line, if any)."""
        top = decision.units[:KEY_UNITS]  # and each question's own of a compound question
        top += [p for p in decision.parts if all(p.unit.text != s.unit.text for s in top)]
        lead = "\n".join(f"[{s.unit.source}] {s.unit.text}" for s in top)
        evidence = format_evidence(
            [
                (i, record_of(n.node).title_path, n.node.get_content())
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
        assert self.llm is not None  # only called with an LLM
        try:
            with llm_budget(self.budget) as budget:  # a chat turn's own, when in one
                if on_text is not None and decision.caveat:  # what the evidence may not hold
                    on_text(decision.caveat + "\n")
                text = call_llm(self.llm, messages, budget, on_text).strip()
        except Exception as exc:  # down, slow (RAG_LLM_BUDGET), or not OpenAI-compatible
            return self._fallback(decision, nodes, f"LLM call failed: {describe(exc)}", reviewed)
        if not text:
            return self._fallback(decision, nodes, "the LLM returned an empty answer", reviewed)
        cleaned, kept = clean_markers(text, len(nodes))
        refused = not cleaned or REFUSAL.rstrip("。") in cleaned
        citations = [citation_of(s) for s in top if s.unit.source in kept]
        if reviewed and (refused or not kept):  # an answer citing nothing does not overrule it
            return refusal(decision, nodes, reviewed=True)
        if refused:
            return Synthesis(
                text=REFUSAL, mode="llm", refused=True, reason="llm_refused",
                explanation="模型认为资料不足以回答。", sources=list(nodes), citations=citations,
                closest=closest_units(decision, range(1, len(nodes) + 1)), reviewed=reviewed,
            )  # fmt: skip
        if not kept:  # an answer citing no source is not one we can stand behind
            return self._fallback(decision, nodes, "the LLM's answer cited no source", False)
        if decision.caveat:  # the evidence may not hold the asked: the first line says so
            cleaned = f"{decision.caveat}\n{cleaned}"
        return Synthesis(text=cleaned, mode="llm", sources=list(nodes), citations=citations,
                         reviewed=reviewed)  # fmt: skip
