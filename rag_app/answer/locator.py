"""AnswerLocator: scores every answer unit of the evidence and decides whether to answer.

The decision stage of a question's walk. It reads the question as the analysis stage read it
(:class:`~rag_app.analysis.asked.AskedQuestion`, with a compound question's parts), cuts the
evidence into units (:func:`~rag_app.answer.units.evidence_units`), gives each unit generic
features (:class:`~rag_app.answer.features.FeatureExtractor`) and a probability from the fitted
:class:`~rag_app.answer.model.AnswerModel`, the question's parts included, then decides once,
in this order: the gate (with its reading stage), then either the reason for a refusal
(:class:`~rag_app.answer.explain.Explainer`) or the answer's cross reading and caveat
(:class:`~rag_app.answer.caveat.Caveats`). The typed result, :class:`AnswerDecision`, carries
everything synthesis needs. Built once per knowledge base; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore

from rag_app.analysis.asked import AskedQuestion, QuestionAnalysis
from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.question import QuestionAnalyzer
from rag_app.analysis.specificity import WordSpecificity
from rag_app.answer.caveat import Caveats
from rag_app.answer.cross_reader import CrossReader, reading_text
from rag_app.answer.decision import AnswerDecision as AnswerDecision
from rag_app.answer.decision import AnswerUnit
from rag_app.answer.decision import ScoredUnit as ScoredUnit
from rag_app.answer.explain import Explainer
from rag_app.answer.features import FeatureExtractor
from rag_app.answer.model import AnswerModel, ReadingStage
from rag_app.answer.passage_scorer import PassageScorer, cosine_embedder
from rag_app.answer.question_features import question_vector
from rag_app.answer.units import evidence_units
from rag_app.retrieval.stats import TermStatistics


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
        self.explain = Explainer(analyzer.lexicon, self.specificity)

    def features(
        self, question: str, nodes: Sequence[NodeWithScore]
    ) -> tuple[QuestionAnalysis, list[AnswerUnit], np.ndarray]:
        """The question's analysis, the evidence's units and their features (training reads
        these)."""
        analysis = self.analyzer(question)
        units = evidence_units(nodes)
        return analysis, units, self._matrix(analysis, units, nodes)[0]

    def _matrix(
        self, analysis: QuestionAnalysis, units: list[AnswerUnit], nodes: Sequence[NodeWithScore]
    ) -> tuple[np.ndarray, dict[str, float]]:
        """The units' features for one question and its terms' IDF weights (read from the
        keyword index once for the whole decision)."""
        weights = self.stats.weights(analysis.terms)
        return self.extractor.matrix(analysis, weights, units, nodes), weights

    def locate(
        self,
        question: str,
        nodes: Sequence[NodeWithScore],
        *,
        query_vector: Sequence[float] | None = None,
        asked: AskedQuestion | None = None,
    ) -> AnswerDecision:
        """The decision on ``question`` over ``nodes``. ``asked``: the question as the analysis
        stage read it (the engine analyses first; None: read here). ``query_vector``: the
        question's vector from the knowledge base's embedding model (retrieval computed it),
        reused by the reading stage when it reads with that model."""
        if not nodes:
            return AnswerDecision(
                refused=True, reason="no_evidence", threshold=self.threshold,
                explanation="在可查询的范围内没有检索到相关资料。",
            )  # fmt: skip
        asked = self.analyzer.asked(question) if asked is None else asked
        analysis = asked.analysis
        units = evidence_units(nodes)
        if not units:
            return AnswerDecision(
                refused=True, reason="no_evidence", threshold=self.threshold, analysis=analysis,
                explanation="检索到的资料中没有可作答的句子、条目或表格行。",
            )  # fmt: skip
        # every unit's features, for the question and for each question of a compound one
        x, weights = self._matrix(analysis, units, nodes)
        part_xs = [self._matrix(part, units, nodes)[0] for part in asked.parts]
        probs = self.model.unit_probabilities(x)
        part_probs = [self.model.unit_probabilities(px) for px in part_xs]
        support = self.model.support_probabilities(x)  # the gate reads the units' own words
        order = np.argsort(-probs, kind="stable")
        scored = [ScoredUnit(unit=units[i], probability=round(float(probs[i]), 4)) for i in order]
        texts = [u.text for u in units]
        q = question_vector(analysis, x, support, texts, self.specificity)
        best = self._gate(question, q, support, texts, query_vector)
        if best < self.threshold:
            reason, explanation = self.explain(
                analysis, weights, self.caveats.evidence_text(nodes), scored[0], x[order[0]],
                best, self.threshold,
            )  # fmt: skip
            return AnswerDecision(
                refused=True, reason=reason, explanation=explanation, best=round(best, 4),
                threshold=self.threshold, units=scored, analysis=analysis,
            )  # fmt: skip
        parts = [_best(units, p) for p in part_probs]
        reading = self._cross_read(question, nodes, scored)
        lacking = self.caveats.lacking(analysis, nodes)
        return AnswerDecision(
            refused=False, best=round(best, 4), threshold=self.threshold, units=scored,
            parts=parts, analysis=analysis, absent_values=lacking.values,
            absent_names=lacking.names, reading=None if reading is None else round(reading, 4),
            caveat=self.caveats.caveat(lacking, reading, best),
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

    def _gate(
        self,
        question: str,
        q: np.ndarray,
        support: np.ndarray,
        texts: list[str],
        query_vector: Sequence[float] | None = None,
    ) -> float:
        """The gate's probability from the question vector ``q``, through the model's reading
        stage when it has one (:meth:`ReadingStage.gated`: the question read against its
        best-supported units, unless the gate is off, refuses whatever the reading, or the
        question is in a script the stage was not fitted on, ``ReadingStage.script``)."""
        gate = self.model.answerable(q)
        stage = self.model.reading
        if stage is None:
            return gate
        read = None
        if self.reader is not None and stage.reads(question):
            read = partial(self._reading, stage, question, support, texts, query_vector)
        return stage.gated(gate, self.threshold, read)

    def _reading(
        self,
        stage: ReadingStage,
        question: str,
        support: np.ndarray,
        texts: list[str],
        query_vector: Sequence[float] | None,
    ) -> float:
        """How well the question reads against its best-supported units (the passage scorer)."""
        assert self.reader is not None
        top = np.argsort(-support, kind="stable")[: stage.units]
        # the question's vector from retrieval, when the reader reads with the same model
        shared = self.embed_model is not None and self.reader.embed_model is self.embed_model
        vector = query_vector if shared else None
        return self.reader.read(question, [texts[i][: stage.max_chars] for i in top], vector)

    @property
    def lexicon(self) -> Lexicon:
        return self.analyzer.lexicon


def _best(units: list[AnswerUnit], probs: np.ndarray) -> ScoredUnit:
    """The best unit for one question of a compound one (the first of equals)."""
    i = int(np.argmax(probs))
    return ScoredUnit(unit=units[i], probability=round(float(probs[i]), 4))
