"""Question files in the shared evaluation schema (one JSON object per line)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator


class QAItem(BaseModel):
    id: str
    question: str
    answerable: bool = True
    answers: list[str] = Field(default_factory=list)
    answer_groups: list[list[str]] = Field(default_factory=list)
    answer_match: str = "any"  # any | all | reference
    gold_docs: list[str] = Field(default_factory=list)
    gold_spans: list[str] = Field(default_factory=list)
    gold_rows: list[dict[str, Any]] = Field(default_factory=list)
    gold_header: list[str] = Field(default_factory=list)
    category: str = "default"
    # from feedback (rag feedback export; rag_app/store/feedback.py): the case fails when the new
    # answer's first line contains one of these (a rejected answer came back); ``refuse``: only a
    # refusal passes (unanswerable); ``comment``: the reviewer's, kept with the case
    not_answer: list[str] = Field(default_factory=list)
    refuse: bool = False
    comment: str = ""

    @field_validator("not_answer", mode="before")
    @classmethod
    def _lines(cls, value: Any) -> list[str]:
        if value is None:
            return []
        return [str(v) for v in (value if isinstance(value, list) else [value]) if v is not None]

    @model_validator(mode="after")
    def _refuse_is_unanswerable(self) -> QAItem:
        if self.refuse:
            self.answerable = False
        return self

    @field_validator("answers", mode="before")
    @classmethod
    def _clean_answers(cls, value: Any) -> list[str]:
        """Drop null/NaN answers (real data has them) and stringify numbers."""
        if value is None:
            return []
        out = []
        for item in value if isinstance(value, list) else [value]:
            if item is None or (isinstance(item, float) and math.isnan(item)):
                continue
            out.append(str(item))
        return out


def load_qa(path: str | Path, limit: int | None = None) -> list[QAItem]:
    items: list[QAItem] = []
    with Path(path).open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                items.append(QAItem.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValueError) as exc:
                raise ValueError(f"{path}:{line_no}: not a valid question record ({exc})") from exc
            if limit is not None and len(items) >= limit:
                break
    return items
