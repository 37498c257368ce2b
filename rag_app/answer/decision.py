"""The answer step's typed values: an answer unit of the evidence, a unit with its probability,
and the decision (:class:`AnswerDecision`) that synthesis answers from.

Values only: synthesis and the facade read them (``decision.outcome``) without calling back
into the modules that decide (rag_app/answer/locator.py) or cut the units (units.py).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from rag_app.analysis.asked import QuestionAnalysis
from rag_app.types import Outcome


class AnswerUnit(BaseModel):
    """One candidate answer piece of one evidence node."""

    source: int = Field(description="1-based number of the evidence node (the citation [n]).")
    index: int = Field(description="Order of the unit inside its node.")
    kind: str = Field(description="sentence | item | row")
    text: str = Field(description="What an answer shows (a row as 'column：value' pairs).")
    context: str = Field("", description="Lead-in of an item, header of a row.")
    start: int = Field(description="Start of the unit in the node's text.")
    end: int = Field(description="End of the unit in the node's text.")
    header: list[str] = Field(default_factory=list)
    cells: list[str] = Field(default_factory=list)

    @property
    def scoring_text(self) -> str:
        return f"{self.context}\n{self.text}" if self.context else self.text


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
