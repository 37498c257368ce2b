"""👍/👎 and comments on answers, kept in the ledger per tenant with the question (as asked and
as resolved), the answer, its sources, its confidence and the settings that produced it, and
what the reviewer expected instead (the right answer, or that it should be refused), when given.

Each record exports as a case of a question file ``rag eval`` runs (:meth:`FeedbackRecord.
as_question`; docs/conversations.md, "Command line"):

* a 👎 fails while the rejected answer comes back: ``not_answer`` holds the first line of the
  rejected answer, and the case fails when the first line of the new answer contains it (both
  compared by :func:`line_key`: citation marks ``[n]`` and all whitespace removed). With the
  reviewer's expected answer (``answers``), the new answer must also hold it; with "should be
  refused" (``refuse: true``, given explicitly or said in the comment: :func:`asks_refusal`) it
  must be a refusal. The rejected answer's sources are never gold documents.
* a 👍 is a regression case: its first line is expected again (``answers``) and its sources'
  documents are the gold ones.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import and_, desc, insert, select, update
from sqlalchemy.engine import Engine

from rag_app.store.schema import feedback
from rag_app.time_format import EpochTime

Rating = Literal["up", "down"]

_CITATION = re.compile(r"\[\d+(?:\s*[,，、]\s*\d+)*\]")
_SPACE = re.compile(r"\s+")
# a comment saying the question should have been refused ("应该拒答", "should be refused"), and
# the negations that must not count ("不应拒答", "should not be refused")
_REFUSE = re.compile(
    r"(应该?|应当|需要|要)拒答|(应该?|应当)拒绝回答|不(应该?|应当|该|要)回答|不能回答|"
    r"should(\s+have)?\s+(been\s+|be\s+)?refused?|should\s*(not|n't)\s+(be\s+)?answer",
    re.IGNORECASE,
)
_NOT_REFUSE = re.compile(
    r"不(应该?|应当|该|要|能)拒(答|绝)|should\s*(not|n't)\s+(have\s+)?(been\s+|be\s+)?refuse",
    re.IGNORECASE,
)


def first_line(answer: str) -> str:
    """The answer's first non-empty line, stripped (what a 👎 rejects: the answer itself; the
    lines after it quote the sources)."""
    return next((line.strip() for line in answer.splitlines() if line.strip()), "")


def line_key(text: str) -> str:
    """A line as answers are compared: citation marks (``[1]``, ``[1,2]``) and whitespace out."""
    return _SPACE.sub("", _CITATION.sub("", text))


def repeats(answer: str, rejected: str) -> bool:
    """The answer's first line contains the rejected first line (:func:`line_key` of both;
    equal lines included). An empty rejected line never matches."""
    key = line_key(rejected)
    return bool(key) and key in line_key(first_line(answer))


def asks_refusal(comment: str) -> bool:
    """The reviewer's comment says the question should have been refused."""
    return bool(_REFUSE.search(comment)) and not _NOT_REFUSE.search(comment)


class Expected(BaseModel):
    """What the reviewer says the answer should have been."""

    answer: str = Field("", max_length=4000, description="The right answer (its key facts).")
    refuse: bool = Field(False, description="The knowledge base should refuse this question.")

    @property
    def given(self) -> bool:
        return bool(self.answer.strip()) or self.refuse


class FeedbackRecord(BaseModel):
    feedback_id: int = 0
    tenant: str
    key_id: str
    rating: Rating
    comment: str = ""
    question: str
    resolved_question: str
    answer: str
    sources: list[dict[str, Any]] = Field(default_factory=list)
    confidence: float | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    conversation_id: str | None = None
    created_at: EpochTime = 0.0  # JSON: ISO 8601, UTC (rag_app/time_format.py)
    expected: Expected | None = Field(
        None, description="The right answer or 'should refuse', when the reviewer gave one."
    )

    def as_question(self) -> dict[str, Any]:
        """A line of a question file ``rag eval`` reads (see the module doc for the rules)."""
        case: dict[str, Any] = {
            "id": f"feedback-{self.feedback_id}",
            "question": self.resolved_question,
            "category": f"feedback_{self.rating}",
            "comment": self.comment,
            "previous_answer": self.answer,
        }
        rejected = first_line(self.answer)
        if self.rating == "up":
            documents = {str(s.get("filename") or "") for s in self.sources} - {""}
            # the line again: each piece between its citation marks (answer_match "all")
            answers = [p.strip() for p in _CITATION.split(rejected) if p.strip()]
            return {
                **case,
                "answerable": True,
                "answers": answers,
                "answer_match": "all",
                "gold_docs": sorted(documents),
            }
        expected = self.expected or Expected()
        if expected.refuse or (not expected.answer.strip() and asks_refusal(self.comment)):
            not_answer = [rejected] if rejected else []
            return {**case, "answerable": False, "refuse": True, "not_answer": not_answer}
        answers = [expected.answer.strip()] if expected.answer.strip() else []
        # an expected answer that holds the rejected line decides alone (else it could never pass)
        held = bool(answers) and line_key(rejected) in line_key(answers[0])
        not_answer = [rejected] if rejected and not held else []
        return {**case, "answerable": True, "answers": answers, "not_answer": not_answer}


def _record(row: Any) -> FeedbackRecord:
    data = dict(row)
    data["sources"] = json.loads(data["sources"] or "[]")
    data["settings"] = json.loads(data["settings"] or "{}")
    data["expected"] = json.loads(data["expected"]) if data.get("expected") else None
    return FeedbackRecord(**data)


class FeedbackStore:
    """Record and list a knowledge base's feedback."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, record: FeedbackRecord) -> int:
        values = record.model_dump(exclude={"feedback_id"})
        values["sources"] = json.dumps(record.sources, ensure_ascii=False)
        values["settings"] = json.dumps(record.settings, ensure_ascii=False)
        values["expected"] = _expected_json(record.expected)
        values["created_at"] = record.created_at or time.time()
        with self.engine.begin() as conn:
            key = conn.execute(insert(feedback).values(**values)).inserted_primary_key
        assert key is not None
        return int(key[0])

    def get(self, tenant: str | None, feedback_id: int) -> FeedbackRecord | None:
        """One record; ``tenant`` None: of any tenant (the CLI's administrator view)."""
        query = select(feedback).where(feedback.c.feedback_id == feedback_id)
        if tenant is not None:
            query = query.where(feedback.c.tenant == tenant)
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else _record(row)

    def set_expected(self, tenant: str | None, feedback_id: int, expected: Expected | None) -> bool:
        """Record (None: clear) what the answer should have been; False when there is no such
        record (of ``tenant``, unless None)."""
        condition = feedback.c.feedback_id == feedback_id
        if tenant is not None:
            condition = and_(condition, feedback.c.tenant == tenant)
        with self.engine.begin() as conn:
            done = conn.execute(
                update(feedback).where(condition).values(expected=_expected_json(expected))
            )
        return bool(done.rowcount)

    def list(
        self, tenant: str | None, *, rating: Rating | None = None, limit: int = 200
    ) -> list[FeedbackRecord]:
        """The latest first; ``tenant`` None: every tenant's (the CLI's administrator view)."""
        conditions = []
        if tenant is not None:
            conditions.append(feedback.c.tenant == tenant)
        if rating is not None:
            conditions.append(feedback.c.rating == rating)
        query = select(feedback).order_by(desc(feedback.c.created_at)).limit(limit)
        if conditions:
            query = query.where(and_(*conditions))
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return [_record(row) for row in rows]


def _expected_json(expected: Expected | None) -> str | None:
    if expected is None or not expected.given:
        return None
    return json.dumps(expected.model_dump(), ensure_ascii=False)
