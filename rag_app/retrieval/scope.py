"""Retrieval scope: which chunks a query may see. Applied inside every branch, before fusion."""

from __future__ import annotations

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

    def chroma_where(self) -> dict[str, Any]:
        clauses: list[dict[str, Any]] = [{"tenant": self.tenant}]
        if self.doc_ids is not None:
            clauses.append({"doc_id": {"$in": list(self.doc_ids)}})
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}
