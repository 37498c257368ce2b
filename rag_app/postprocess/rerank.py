"""Rerankers (LlamaIndex node postprocessors).

``LexicalReranker`` (default, no model): combines the fused retrieval rank with how much of the
question the chunk covers: IDF-weighted query-term coverage of heading path + text, coverage of the
heading path alone, the best single line (a table row, a list item) and exact 第X条 label matches
in the heading path. ``CrossEncoderReranker``: a sentence-transformers cross-encoder from a local
folder (``rerank_model = "hf:<path>"``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from rag_app.answer.features import weighted_coverage
from rag_app.retrieval.record import record_of, with_fields
from rag_app.retrieval.stats import TermStatistics
from rag_app.text.tokenizer import label_tokens, query_tokens

_LINE_LABEL = re.compile(r"^[#*\s]*第[零〇一二两三四五六七八九十百千\d]+(?:条|章|节|编)")
_ASCII_TOKEN = re.compile(r"[0-9a-z._-]+")


@lru_cache(maxsize=8192)
def _boundary_pattern(token: str) -> re.Pattern[str]:
    return re.compile(r"(?<![0-9a-z])" + re.escape(token) + r"(?![0-9a-z])")


def term_in(token: str, body: str) -> bool:
    """``token`` occurs in lower-cased ``body``; ASCII words and numbers must match whole
    (so "30" is not found in "307"), CJK tokens as substrings."""
    if token not in body:
        return False
    if _ASCII_TOKEN.fullmatch(token):
        return _boundary_pattern(token).search(body) is not None
    return True


def coverage(text: str, weights: dict[str, float]) -> float:
    """IDF-weighted share of the query tokens that occur in ``text`` (see :func:`term_in`)."""
    return weighted_coverage(weights, text.lower(), credit=_whole)


def _whole(term: str, body: str) -> float:
    return 1.0 if term_in(term, body) else 0.0


def best_line_coverage(text: str, weights: dict[str, float]) -> float:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return max((coverage(ln, weights) for ln in lines), default=0.0)


class LexicalReranker(BaseNodePostprocessor):
    """Model-free reranker; every weight is a setting."""

    top_n: int = Field(5, gt=0)
    w_rank: float = Field(0.3, ge=0, description="Weight of 1/rank in the fused list.")
    w_coverage: float = Field(1.0, ge=0)
    w_heading: float = Field(0.5, ge=0)
    w_line: float = Field(1.0, ge=0)
    w_label: float = Field(
        1.0, ge=0, description="Bonus when a 第X条 label of the question heads the path or a line."
    )
    _stats: TermStatistics = PrivateAttr()

    def __init__(
        self,
        ledger: Any | None = None,
        stats: TermStatistics | None = None,
        **data: Any,
    ) -> None:
        """``stats``: the knowledge base's term statistics (default: its own over ``ledger``)."""
        super().__init__(**data)
        self._stats = stats if stats is not None else TermStatistics(ledger)

    @classmethod
    def class_name(cls) -> str:
        return "LexicalReranker"

    def features(self, question: str, nodes: Sequence[NodeWithScore]) -> list[dict[str, float]]:
        weights = self._stats.weights(list(query_tokens(question)))
        labels = set(label_tokens(question))
        out = []
        for rank, node in enumerate(nodes, start=1):
            path = record_of(node.node).title_path
            text = node.node.get_content()
            # labels that head the path or start a line of the text (an article's own label,
            # not a cross-reference such as "依照本法第三十三条")
            path_labels = set(label_tokens(path))
            for line in text.splitlines():
                head = _LINE_LABEL.match(line.strip())
                if head:
                    path_labels.update(label_tokens(head.group(0)))
            out.append(
                {
                    "rank": 1.0 / rank,
                    "coverage": coverage(path + "\n" + text, weights),
                    "heading": coverage(path, weights),
                    "line": best_line_coverage(text, weights),
                    "label": 1.0 if labels and labels & path_labels else 0.0,
                }
            )
        return out

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if not nodes or query_bundle is None:
            return nodes[: self.top_n]
        feats = self.features(query_bundle.query_str, nodes)
        scored = []
        for node, f in zip(nodes, feats, strict=True):
            score = (
                self.w_rank * f["rank"]
                + self.w_coverage * f["coverage"]
                + self.w_heading * f["heading"]
                + self.w_line * f["line"]
                + self.w_label * f["label"]
            )
            scored_node = with_fields(
                node.node,
                retrieval_score=float(node.score or 0.0),
                rerank_coverage=round(f["coverage"], 4),
            )
            scored.append(NodeWithScore(node=scored_node, score=round(score, 6)))
        scored.sort(key=lambda n: -(n.score or 0.0))
        return scored[: self.top_n]


class CrossEncoderReranker(BaseNodePostprocessor):
    """A sentence-transformers cross-encoder loaded from a local folder."""

    model_path: str
    top_n: int = Field(5, gt=0)
    _model: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        from sentence_transformers import CrossEncoder

        try:
            self._model = CrossEncoder(self.model_path, device="cpu")
        except Exception as exc:
            raise RuntimeError(
                f"could not load cross-encoder '{self.model_path}' ({exc}); set "
                "RAG_RERANK=hf:<local cross-encoder folder> or RAG_RERANK=lexical"
            ) from exc

    @classmethod
    def class_name(cls) -> str:
        return "CrossEncoderReranker"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if not nodes or query_bundle is None:
            return nodes[: self.top_n]
        pairs = [(query_bundle.query_str, n.node.get_content()) for n in nodes]
        scores = self._model.predict(pairs)
        ranked = sorted(
            (
                NodeWithScore(node=n.node, score=float(s))
                for n, s in zip(nodes, scores, strict=True)
            ),
            key=lambda n: -(n.score or 0.0),
        )
        return ranked[: self.top_n]
