"""AnswerLocator: scores every answer unit of the evidence and decides whether to answer.

The question is analysed once (:class:`~rag_app.analysis.QuestionAnalyzer`), the evidence is cut
into units (:func:`~rag_app.answer.units.evidence_units`), each unit gets generic features
(:class:`~rag_app.answer.features.FeatureExtractor`) and a probability from the fitted
:class:`~rag_app.answer.model.AnswerModel`. No unit at or above the threshold: refuse, with a
reason in words saying what was missing. Built once per knowledge base; thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore
from pydantic import BaseModel, Field

from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.question import QuestionAnalysis, QuestionAnalyzer
from rag_app.analysis.specificity import WordSpecificity
from rag_app.answer.caveat import Caveats, Lacking
from rag_app.answer.cross_reader import CrossReader, reading_text
from rag_app.answer.features import (
    FEATURES,
    FeatureExtractor,
    rival_value,
    stated_values,
    term_credit,
)
from rag_app.answer.model import AnswerModel
from rag_app.answer.passage_scorer import PassageScorer, cosine_embedder
from rag_app.answer.question_features import (
    question_vector,
    said,
)
from rag_app.answer.units import AnswerUnit, evidence_units
from rag_app.retrieval.stats import TermStatistics
from rag_app.types import Outcome

TYPE_WORDS = {
    "duration": "时长",
    "date": "日期或时间",
    "money": "金额",
    "ratio": "比例",
    "number": "数值",
    "person": "人名",
    "organization": "机构名称",
    "place": "地点",
}


class ScoredUnit(BaseModel):
    unit: AnswerUnit
    probability: float


class AnswerDecision(BaseModel):
    """Typed output of the answer step: refuse or not, why, and the units best first."""

    refused: bool
    reason: str | None = Field(
        None,
        description="Machine code: no_evidence, entity_missing, constraint_missing, "
        "term_missing, head_missing, value_missing, weak_evidence.",
    )
    explanation: str | None = Field(None, description="The reason in words a user can act on.")
    best: float = Field(0.0, description="P(the evidence answers the question), gate model.")
    threshold: float = 0.0
    units: list[ScoredUnit] = Field(
        default_factory=list, description="Every unit of the evidence, best first."
    )
    parts: list[ScoredUnit] = Field(
        default_factory=list,
        description="A compound question (等待期是多少天？轻症能赔多少？): the best unit for "
        "each of its questions, in the question's order; empty for a question asking one thing.",
    )
    absent_values: list[str] = Field(
        default_factory=list,
        description="Values the question states (65岁, 2021年10月) that no passage of the "
        "evidence holds: the answer is the closest the evidence has, not the asked one.",
    )
    absent_names: list[str] = Field(
        default_factory=list,
        description="Names the question uses (SAP, 《员工手册》, 张某某; rag_app.analysis.names) "
        "that no passage of the evidence mentions: the answer is about what the evidence has, "
        "not the named one.",
    )
    reading: float | None = Field(
        None,
        description="P(the answer's leading units state the answer), by the cross reader "
        "(rag_app.answer.cross_reader); None: not read.",
    )
    caveat: str | None = Field(
        None,
        description="An answer the knowledge base may not hold (a stated value or name its "
        "evidence lacks, or the reader finds no unit stating it): the first line says so, "
        "then gives the closest the evidence has. None: answered plainly, or refused.",
    )
    analysis: QuestionAnalysis | None = None

    @property
    def outcome(self) -> Outcome:
        """answered | qualified | refused."""
        if self.refused:
            return "refused"
        return "qualified" if self.caveat else "answered"


_PART_ENDS = ("？", "?", "；", ";")


def question_parts(question: str, lexicon: Lexicon) -> list[str]:
    """The questions of a compound question ("等待期是多少天？轻症能赔多少？"): the first as
    written (with any sentence before it), each later one with the words of the ones before it,
    their question words blanked (a later question often leaves its subject out: "重疾险的等待
    期是   ，轻症能赔多少？"). Empty for a question that asks one thing."""
    pieces, start = [], 0
    for i, ch in enumerate(question):
        if ch in _PART_ENDS:
            pieces.append(question[start : i + 1])
            start = i + 1
    pieces.append(question[start:])
    pieces = [p for p in pieces if p.strip()]
    asking = [k for k, p in enumerate(pieces) if lexicon.cues(p)]
    if len(asking) < 2:
        return []
    parts = ["".join(pieces[: asking[0] + 1])]
    for k in asking[1:]:
        before = list("".join(pieces[:k]))
        for cue_start, cue_end, _, _ in lexicon.cues("".join(before)):
            before[cue_start:cue_end] = " " * (cue_end - cue_start)
        text = "".join(before).rstrip()
        if text and text[-1] in _PART_ENDS:
            text = text[:-1] + "，"
        parts.append(text + pieces[k])
    return parts


class AnswerLocator:
    def __init__(
        self,
        model: AnswerModel,
        analyzer: QuestionAnalyzer,
        stats: TermStatistics,
        embed_model: BaseEmbedding | None = None,
        *,
        threshold: float,
        reader: PassageScorer | None = None,
        cross_reader: CrossReader | None = None,
        qualify_below: float = 0.0,
        qualify_confidence: float = 0.0,
        cross_units: int = 2,
    ) -> None:
        """``cross_reader``: reads the question against the answer's leading ``cross_units``
        units; an answer whose best reading is below ``qualify_below`` is qualified, and so is
        one the gate answers with a probability below ``qualify_confidence`` (a borderline
        decision)."""
        self.model = model
        self.reader = reader
        self.cross_reader = cross_reader
        self.caveats = Caveats(
            lexicon=analyzer.lexicon,
            qualify_below=qualify_below,
            qualify_confidence=qualify_confidence,
        )
        self.cross_units = cross_units
        self.embed_model = embed_model  # the knowledge base's: retrieval embeds the question
        self.analyzer = analyzer
        self.stats = stats
        self.threshold = threshold
        self.specificity = WordSpecificity()
        # the embedding features only for a model that weighs them (model.reads_embeddings)
        embed = (
            cosine_embedder(embed_model)
            if embed_model is not None and model.reads_embeddings()
            else None
        )
        self.extractor = FeatureExtractor(analyzer.lexicon, embed)

    def features(
        self, question: str, nodes: Sequence[NodeWithScore]
    ) -> tuple[QuestionAnalysis, list[AnswerUnit], np.ndarray]:
        analysis, units, x, _ = self._read(question, nodes)
        return analysis, units, x

    def _read(
        self,
        question: str,
        nodes: Sequence[NodeWithScore],
        units: list[AnswerUnit] | None = None,
    ) -> tuple[QuestionAnalysis, list[AnswerUnit], np.ndarray, dict[str, float]]:
        """The analysis, the units (``units``: already cut from ``nodes``), their features, and
        the question's IDF weights (read from the keyword index once for the whole decision)."""
        analysis = self.analyzer(question)
        units = evidence_units(nodes) if units is None else units
        weights = self.stats.weights(analysis.terms)
        x = self.extractor.matrix(analysis, weights, units, nodes)
        return analysis, units, x, weights

    def locate(
        self,
        question: str,
        nodes: Sequence[NodeWithScore],
        *,
        query_vector: Sequence[float] | None = None,
    ) -> AnswerDecision:
        """The decision on ``question`` over ``nodes``. ``query_vector``: the question's vector
        from the knowledge base's embedding model (retrieval computed it), reused by the reading
        stage when it reads with that model."""
        if not nodes:
            return AnswerDecision(
                refused=True, reason="no_evidence", threshold=self.threshold,
                explanation="在可查询的范围内没有检索到相关资料。",
            )  # fmt: skip
        analysis, units, x, weights = self._read(question, nodes)
        if not units:
            return AnswerDecision(
                refused=True, reason="no_evidence", threshold=self.threshold, analysis=analysis,
                explanation="检索到的资料中没有可作答的句子、条目或表格行。",
            )  # fmt: skip
        probs = self.model.unit_probabilities(x)
        order = np.argsort(-probs, kind="stable")
        scored = [ScoredUnit(unit=units[i], probability=round(float(probs[i]), 4)) for i in order]
        support = self.model.support_probabilities(x)  # the gate reads the units' own words
        texts = [u.text for u in units]
        best = self.model.answerable(question_vector(analysis, x, support, texts, self.specificity))
        best = self._read_stage(question, best, support, texts, query_vector)
        refused = best < self.threshold
        reason = explanation = None
        parts: list[ScoredUnit] = []
        lacking = Lacking()
        if refused:
            reason, explanation = self._why(analysis, weights, nodes, scored[0], x[order[0]], best)
        else:
            parts = [
                self._best_for(part, nodes, units)
                for part in question_parts(question, self.lexicon)
            ]
            lacking = self.caveats.lacking(analysis, nodes)
        reading = None if refused else self._cross_read(question, nodes, scored)
        return AnswerDecision(
            refused=refused, reason=reason, explanation=explanation, best=round(best, 4),
            threshold=self.threshold, units=scored, parts=parts, analysis=analysis,
            absent_values=lacking.values, absent_names=lacking.names,
            reading=None if reading is None else round(reading, 4),
            caveat=None if refused else self.caveats.caveat(lacking, reading, best),
        )  # fmt: skip

    def _cross_read(
        self, question: str, nodes: Sequence[NodeWithScore], scored: list[ScoredUnit]
    ) -> float | None:
        """The cross reader's best P(states the answer) over the answer's leading units, each
        read with its heading path and its context in the passage."""
        if self.cross_reader is None or not scored:
            return None
        texts = [reading_text(nodes[s.unit.source - 1], s.unit) for s in scored[: self.cross_units]]
        return max(r.probability for r in self.cross_reader.read(question, texts))

    def _read_stage(
        self,
        question: str,
        gate: float,
        support: np.ndarray,
        texts: list[str],
        query_vector: Sequence[float] | None = None,
    ) -> float:
        """The gate's probability through the model's reading stage, when it has one: the
        question read against its best-supported units. A question the gate refuses whatever
        the reading (a reading only lowers the probability) is not read, nor any question when
        the gate is off (threshold 0: everything is answered), nor one in a script the stage
        was not fitted on (``ReadingStage.script``)."""
        stage = self.model.reading
        if stage is None:
            return gate
        if (
            self.reader is None
            or self.threshold <= 0
            or stage.upper(gate) < self.threshold
            or not stage.reads(question)
        ):
            return stage.probability(gate, None)
        top = np.argsort(-support, kind="stable")[: stage.units]
        # the question's vector from retrieval, when the reader reads with the same model
        shared = self.embed_model is not None and self.reader.embed_model is self.embed_model
        vector = query_vector if shared else None
        reading = self.reader.read(question, [texts[i][: stage.max_chars] for i in top], vector)
        return stage.probability(gate, reading)

    @property
    def lexicon(self) -> Lexicon:
        return self.analyzer.lexicon

    def _best_for(
        self, question: str, nodes: Sequence[NodeWithScore], units: list[AnswerUnit]
    ) -> ScoredUnit:
        """The best unit of the evidence (cut into ``units``) for one question of a compound
        one."""
        _, _, x, _ = self._read(question, nodes, units)
        probs = self.model.unit_probabilities(x)
        i = int(np.argmax(probs))
        return ScoredUnit(unit=units[i], probability=round(float(probs[i]), 4))

    def _normalize(self, text: str) -> str:
        return self.lexicon.normalize(text.lower())

    def _why(
        self,
        analysis: QuestionAnalysis,
        weights: dict[str, float],
        nodes: Sequence[NodeWithScore],
        top: ScoredUnit,
        x: np.ndarray,
        best: float,
    ) -> tuple[str, str]:
        """What was missing, from the question analysis and the best unit's features."""
        everything = self.caveats.evidence_text(nodes)
        for entity in analysis.entities:
            if self._normalize(entity) not in everything:
                return "entity_missing", f"检索到的资料中没有提到“{entity}”。"
        f = dict(zip(FEATURES, x, strict=True))
        if f["constraint_any"] == 0:
            values = "、".join(f"“{v}”" for v in stated_values(analysis))
            # read as the gate reads it (constraint_rival): 15日 is a rival of 20天
            rival = rival_value(analysis, self._normalize(top.unit.text), self._normalize)
            found = f"“{rival}”" if rival else f"“{_short(top.unit)}”等相关内容"
            return "constraint_missing", f"只找到了{found}的资料，没有{values}的。"
        missing = [
            t for t in analysis.terms if len(t) >= 2 and not said(self._normalize(t), everything)
        ]
        asked = [t for t in missing if t in analysis.phrase or t in analysis.focus]
        if asked or missing:  # the most specific word of what is asked, else of the question
            rarest = max(asked or missing, key=lambda t: (self.specificity(t), weights.get(t, 0.0)))
            return "term_missing", f"检索到的资料中没有“{rarest}”的相关内容。"
        head = self._normalize(analysis.head) if analysis.head else ""
        if len(head) >= 2 and term_credit(head, everything) == 0:
            return (
                "head_missing",
                f"找到了“{_short(top.unit)}”等相关内容，但没有提到“{analysis.head}”。",
            )
        if analysis.expects_value and f["value_gap"] > 0 and analysis.answer_type in TYPE_WORDS:
            subject = _short(top.unit)
            what = "".join(analysis.phrase[-1:]) if analysis.phrase else (analysis.head or "")
            of_head = f"“{what}”的" if len(what) >= 2 else ""
            return (
                "value_missing",
                f"找到了“{subject}”，但其中没有{of_head}{TYPE_WORDS[analysis.answer_type]}。",
            )
        return (
            "weak_evidence",
            f"最接近的内容“{_short(top.unit)}”与问题的对应程度不足"
            f"（匹配度 {best:.2f}，低于阈值 {self.threshold:.2f}）。",
        )


_SPACES = re.compile(r"\s+")


def _short(unit: AnswerUnit, limit: int = 24) -> str:
    text = unit.cells[0] if unit.kind == "row" and unit.cells else unit.text
    text = _SPACES.sub("", text)
    return text if len(text) <= limit else text[:limit] + "…"
