"""👍/👎 and comments on answers, kept in the ledger per tenant with the question (as asked and
as resolved), the answer, its sources, its confidence and the settings that produced it; a 👎
exports as a question for ``rag eval`` (a case to fix)."""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import and_, desc, insert, select
from sqlalchemy.engine import Engine

from rag_app.store.schema import feedback

Rating = Literal["up", "down"]


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
    created_at: float = 0.0

    def as_question(self) -> dict[str, Any]:
        """A line of a question file ``rag eval`` reads: the question as it was asked of the
        knowledge base, its sources' documents as the gold ones, the verdict and comment."""
        return {
            "id": f"feedback-{self.feedback_id}",
            "question": self.resolved_question,
            "answerable": True,
            "answers": [],
            "gold_docs": sorted({str(s.get("filename") or "") for s in self.sources} - {""}),
            "category": f"feedback_{self.rating}",
            "comment": self.comment,
            "previous_answer": self.answer,
        }


class FeedbackStore:
    """Record and list a knowledge base's feedback."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, record: FeedbackRecord) -> int:
        values = record.model_dump(exclude={"feedback_id"})
        values["sources"] = json.dumps(record.sources, ensure_ascii=False)
        values["settings"] = json.dumps(record.settings, ensure_ascii=False)
        values["created_at"] = record.created_at or time.time()
        with self.engine.begin() as conn:
            key = conn.execute(insert(feedback).values(**values)).inserted_primary_key
        assert key is not None
        return int(key[0])

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
        return [
            FeedbackRecord(
                **{
                    **row,
                    "sources": json.loads(row["sources"] or "[]"),
                    "settings": json.loads(row["settings"] or "{}"),
                }
            )
            for row in rows
        ]
