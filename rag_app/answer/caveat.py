"""The first line's caveat: what the evidence lacks of the question, and whether an answer the
gate lets through is qualified ("知识库中没有“X”的记录；最接近的是：" / "…可能没有确切的答案…").

An answer is qualified when a value or a firm name the question states is in no form in the
evidence, when the cross reader's best reading of the answer's leading units is below
``qualify_below``, or when the gate answers with a probability below ``qualify_confidence`` (a
borderline decision). Built once per knowledge base with its lexicon; thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from llama_index.core.schema import NodeWithScore
from pydantic import BaseModel, ConfigDict

from rag_app.analysis.lexicon import Lexicon
from rag_app.analysis.names import firm_names
from rag_app.analysis.question import QuestionAnalysis
from rag_app.answer.features import any_value_in, stated_values
from rag_app.answer.question_features import said, with_canonical_forms
from rag_app.retrieval.record import record_of
from rag_app.text.numerals import in_words
from rag_app.text.quantities import amount_in, plain

# what a Latin name's spellings differ by: Type-C, Type C and TypeC, Wi-Fi and WiFi are one name
_NAME_SEPARATORS = re.compile(r"[\s\-_·・./]+")
# a number written with thousands separators (22,680,010)
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")


class Lacking(BaseModel):
    """What the evidence lacks of the question: its stated values and its firm names."""

    values: list[str] = []
    names: list[str] = []


class Caveats(BaseModel):
    """Decides an answer's first-line caveat (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    lexicon: Lexicon
    qualify_below: float = 0.0
    qualify_confidence: float = 0.0

    def _normalize(self, text: str) -> str:
        return self.lexicon.normalize(text.lower())

    @staticmethod
    def _passages(nodes: Sequence[NodeWithScore]) -> str:
        """The passages, each under its heading path."""
        return "\n".join(record_of(n.node).title_path + "\n" + n.node.get_content() for n in nodes)

    def evidence_text(self, nodes: Sequence[NodeWithScore]) -> str:
        """The passages with their heading paths, normalised and with their canonical forms:
        the evidence as the gate reads it."""
        return with_canonical_forms(self._normalize(self._passages(nodes)))

    def absent_values(self, analysis: QuestionAnalysis, evidence: str) -> list[str]:
        """The question's stated values (:func:`stated_values`; bounds such as 超过7亿 aside)
        that ``evidence`` (:meth:`evidence_text`, or :meth:`_plain_evidence`) holds in no form:
        not as written, not as a date's other spelling (2021-10), not with its number in
        Chinese numerals (四倍, 三十五周岁), not as the same amount written otherwise (12万元 for
        120000元, 120,000, full-width digits)."""
        absent: list[str] = []
        grouped = [m.span() for m in _GROUPED.finditer(analysis.text)]
        for value in stated_values(analysis):
            # a group of a number the question writes with separators is that number (22,680,010)
            at = analysis.text.find(value)
            value = next((analysis.text[a:b] for a, b in grouped if a <= at < b), value)
            if value in absent:
                continue
            norm = self._normalize(plain(value))
            if any_value_in([norm], evidence) == 1.0 or any(w in evidence for w in in_words(norm)):
                continue
            if amount_in(norm, evidence):
                continue
            absent.append(value)
        return absent

    def _plain_evidence(self, nodes: Sequence[NodeWithScore]) -> str:
        """:meth:`evidence_text` in NFKC, numbers without thousands separators: what the
        question's values and names are looked up in."""
        return with_canonical_forms(self._normalize(plain(self._passages(nodes))))

    def _name_said(self, name: str, evidence: str, squeezed: str) -> bool:
        """Whether ``evidence`` holds ``name`` as written, or, a Latin name, spelled with other
        separators (Type-C, Type C, TypeC; ``squeezed``: the evidence without them)."""
        norm = self._normalize(plain(name))
        if said(norm, evidence):
            return True
        bare = _NAME_SEPARATORS.sub("", norm)
        return bare.isascii() and len(bare) >= 2 and bare in squeezed

    def lacking(self, analysis: QuestionAnalysis, nodes: Sequence[NodeWithScore]) -> Lacking:
        """The question's values and firm names the evidence holds in no form."""
        evidence = self._plain_evidence(nodes)
        squeezed = _NAME_SEPARATORS.sub("", evidence)
        return Lacking(
            values=self.absent_values(analysis, evidence),
            names=[n for n in firm_names(analysis) if not self._name_said(n, evidence, squeezed)],
        )

    def caveat(self, lacking: Lacking, reading: float | None, best: float) -> str | None:
        """The first line's warning: what the evidence lacks, or that it may not answer."""
        absent = [*lacking.values, *lacking.names]
        if absent:
            named = "、".join(f"“{v}”" for v in absent)
            return f"知识库中没有{named}的记录；最接近的是："
        if reading is not None and reading < self.qualify_below:
            return "知识库中没有找到确切的答案；最接近的是："
        if best < self.qualify_confidence:
            return "知识库中可能没有确切的答案；最接近的是："
        return None
