"""What ``rag eval`` evaluates: a knowledge base opened here (:class:`rag_app.kb.KnowledgeBase`),
or one behind a running ``rag serve`` asked over HTTP (:class:`Served`, ``rag eval --server``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rag_app.kb import KnowledgeBase
    from rag_app.types import Answer, Source


class Served(Protocol):
    """A knowledge base behind a running server: retrieved from and asked through its API (the
    key's tenant; ``tenant`` is ignored). ``description`` names it in the run's settings; there
    is no gate to calibrate (its thresholds are the server's)."""

    description: dict[str, Any]

    def retrieve(self, question: str, top_k: int = 5, tenant: str = "default") -> list[Source]:
        """The server's top-k chunks."""
        ...

    def ask(self, question: str, tenant: str = "default", top_k: int = 5) -> Answer:
        """The server's answer."""
        ...


def kb_settings(kb: KnowledgeBase | Served) -> dict[str, Any]:
    """The settings that change evaluation results (recorded with the run); a served KB's as
    its ``description`` says."""
    from rag_app.kb import KnowledgeBase

    if not isinstance(kb, KnowledgeBase):
        return dict(kb.description)
    s = kb.settings
    keys = (
        "embedding",
        "chunker",
        "chunk_size",
        "chunk_overlap",
        "retrieval_mode",
        "fusion",
        "rerank",
        "gate",
        "neighbors",
        "context_budget",
        "llm_model",
    )
    data = {key: getattr(s, key) for key in keys}
    data["llm"] = bool(s.llm_base_url)
    if not s.llm_base_url:
        data.pop("llm_model")
    return data
