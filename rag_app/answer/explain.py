"""The refusal's reason: what the evidence lacks of the question, in words a user can act on.

Called once per refused question, by the locator after it decides
(:meth:`~rag_app.answer.locator.AnswerLocator.locate`): from the question's analysis, the
evidence as the gate reads it, and the best unit with its features, the first of entity,
stated value, term, head and value missing, else weak evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from rag_app.analysis.asked import QuestionAnalysis
from rag_app.analysis.lexicon import Lexicon
from rag_app.answer.decision import AnswerUnit, ScoredUnit
from rag_app.answer.features import FEATURES, rival_value, stated_values
from rag_app.text.matching import said, term_credit

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


class Explainer:
    """Says why a question is refused (see the module docstring). Built once per locator;
    thread-safe (read-only)."""

    def __init__(self, lexicon: Lexicon, specificity: Callable[[str], float]) -> None:
        self.lexicon = lexicon
        self.specificity = specificity

    def _normalize(self, text: str) -> str:
        return self.lexicon.normalize(text.lower())

    def __call__(
        self,
        analysis: QuestionAnalysis,
        weights: dict[str, float],
        everything: str,
        top: ScoredUnit,
        x: np.ndarray,
        best: float,
        threshold: float,
    ) -> tuple[str, str]:
        """The reason's code and words: ``everything``, the evidence as the gate reads it
        (Caveats.evidence_text); ``top`` the best unit and ``x`` its features; ``best`` the
        gate's probability and ``threshold`` the one it fell below; ``weights`` the question
        terms' IDF."""
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
            f"（匹配度 {best:.2f}，低于阈值 {threshold:.2f}）。",
        )


_SPACES = re.compile(r"\s+")


def _short(unit: AnswerUnit, limit: int = 24) -> str:
    text = unit.cells[0] if unit.kind == "row" and unit.cells else unit.text
    text = _SPACES.sub("", text)
    return text if len(text) <= limit else text[:limit] + "…"
