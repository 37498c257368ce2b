"""What the analysis stage hands down: a question read for answering (:class:`QuestionAnalysis`),
and with it the questions of a compound one (:class:`AskedQuestion`).

Typed values only (and :func:`numeric_range`, a reading of one): the later stages read them
without calling back into the analyzer (rag_app/analysis/question.py).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from rag_app.text.matching import DIGITS

# answer types whose answer is a value of a recognisable form (lexicon value_patterns)
VALUE_TYPES = ("duration", "date", "money", "ratio", "number", "person", "organization", "place")


class QuestionAnalysis(BaseModel):
    """A question read for answering (typed output of :class:`QuestionAnalyzer`)."""

    text: str
    answer_type: str = Field(
        "other",
        description="choice (谁更…), duration, date, money, ratio, number, person, "
        "organization, place, reason, method, list, yes_no, definition, what, other",
    )
    cue: str | None = Field(None, description="The question word that set the answer type.")
    head: str | None = Field(None, description="The asked thing next to the question word.")
    entities: list[str] = Field(default_factory=list, description="Names, titles, codes.")
    constraints: list[str] = Field(
        default_factory=list, description="Values the answer must be about (5000元, 63岁, 2021年)."
    )
    bounds: list[str] = Field(
        default_factory=list,
        description="The constraints that bound a range or a comparison (超过7亿, 20000至30000元): "
        "the evidence need not state them.",
    )
    terms: list[str] = Field(default_factory=list, description="Content tokens (index tokens).")
    focus: list[str] = Field(
        default_factory=list,
        description="Terms of the clause that asks (not a scope clause such as '根据…，'), "
        "other than the entities: what the answer must be about.",
    )
    phrase: list[str] = Field(
        default_factory=list,
        description="Terms of the asked phrase, the content words around the head "
        "('机房温度上限是多少' -> 机房, 温度): one answer unit should hold them together.",
    )
    asked: str = Field(
        "", description="The asked phrase as written (机房温度), for semantic matching."
    )
    labels: list[str] = Field(default_factory=list, description="第X条 labels, canonical.")
    names: list[str] = Field(
        default_factory=list, description="Anonymised names (张某某), also among the terms."
    )
    subjects: list[str] = Field(
        default_factory=list,
        description="The names and entities of a question asked of several subjects at once "
        "(A和B分别…, A与B谁更…); empty otherwise.",
    )

    @property
    def expects_value(self) -> bool:
        return self.answer_type in VALUE_TYPES


class AskedQuestion(BaseModel):
    """A question as the analysis stage hands it to retrieval and the decision: its analysis,
    and the analyses of its questions when it asks several (等待期是多少天？轻症能赔多少？)."""

    analysis: QuestionAnalysis
    parts: list[QuestionAnalysis] = Field(
        default_factory=list,
        description="A compound question's questions in order (rag_app.analysis.compound); "
        "empty for a question asking one thing.",
    )


def numeric_range(analysis: QuestionAnalysis) -> tuple[float, float, int] | None:
    """The range a question states (20000至30000元: two bounds, the lower first) as (low,
    high, where it starts in the question); None without one."""
    if len(analysis.bounds) != 2:
        return None
    nums = []
    for b in analysis.bounds:
        m = DIGITS.match(b)
        if m is None:
            return None
        nums.append(float(m.group(0)))
    lo, hi = nums
    if not lo < hi:
        return None
    return lo, hi, analysis.text.find(analysis.bounds[0])
