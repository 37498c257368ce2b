"""Retrieval scope: which chunks a query may see. Applied inside every branch, before fusion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scope:
    """A tenant (always) and optionally a set of documents."""

    tenant: str = "default"
    doc_ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.tenant:
            raise ValueError("a scope needs a tenant")

    @classmethod
    def of(cls, tenant: str = "default", doc_ids: Sequence[str] | None = None) -> Scope:
        return cls(tenant=tenant, doc_ids=tuple(doc_ids) if doc_ids is not None else None)

    def chroma_where(self) -> dict[str, Any]:
        clauses: list[dict[str, Any]] = [{"tenant": self.tenant}]
        if self.doc_ids is not None:
            clauses.append({"doc_id": {"$in": list(self.doc_ids)}})
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}


@dataclass(frozen=True)
class Request:
    """One question and where it may look, checked once where it enters (the facade) and
    passed whole down to retrieval and the answer engine. The question is kept stripped."""

    question: str
    scope: Scope = Scope()
    top_k: int = 5

    def __post_init__(self) -> None:
        question = (self.question or "").strip()
        if not question:
            raise ValueError("question is empty")
        if self.top_k <= 0:
            raise ValueError("top_k must be positive")
        object.__setattr__(self, "question", question)

    @classmethod
    def of(
        cls,
        question: str,
        tenant: str = "default",
        top_k: int = 5,
        doc_ids: Sequence[str] | None = None,
    ) -> Request:
        return cls(question=question, scope=Scope.of(tenant, doc_ids), top_k=top_k)
