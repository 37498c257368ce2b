"""What the ``rag`` command line prints, apart from the commands themselves: the name of a score
(fused, rerank, ...), the sources an answer cites, short document ids, sources as JSON with the
API's field names."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rag_app.config import Settings
from rag_app.types import Source

MARKER = re.compile(r"\[(\d{1,3})\]")

# what HybridRetriever's score is, per retrieval mode
_RETRIEVAL_SCORE = {"hybrid": "fused", "dense": "dense", "keyword": "bm25"}


def retrieval_score_name(settings: Settings) -> str:
    """The name of the scores ``kb.retrieve`` returns: "fused" (dense + BM25) by default."""
    return _RETRIEVAL_SCORE.get(settings.retrieval_mode, settings.retrieval_mode)


def answer_score_name(settings: Settings) -> str:
    """The name of the scores of ``kb.ask``'s sources: the reranker's, unless there is none."""
    if settings.rerank.strip() == "none":
        return retrieval_score_name(settings)
    return "rerank"


def fmt_score(name: str, score: float) -> str:
    """``fused 0.0328``: fused (RRF) scores are small, so they get four decimals."""
    digits = 4 if name == "fused" else 3
    return f"{name} {score:.{digits}f}"


def confidence_line(confidence: float, threshold: float, reviewed: bool = False) -> str:
    """The answer model's probability beside the gate's threshold, so a user sees how near a
    refusal an answer was ("confidence 0.36 · gate threshold 0.049": refused below it);
    ``reviewed``: below it, and the LLM read the evidence (RAG_LLM_REVIEW)."""
    if threshold <= 0:
        return f"confidence {confidence:.3g} (answer model) · the gate is off"
    review = " · below it, read by the LLM (RAG_LLM_REVIEW)" if reviewed else ""
    return (
        f"confidence {confidence:.3g} (answer model) · gate threshold {threshold:.3g} "
        f"(RAG_GATE; rag eval --calibrate fits yours){review}"
    )


def cited_numbers(answer: str, n_sources: int) -> set[int]:
    """The source numbers whose ``[n]`` marker appears in the answer text."""
    found = {int(m.group(1)) for m in MARKER.finditer(answer)}
    return {n for n in found if 1 <= n <= n_sources}


def short_ids(ids: Iterable[str], minimum: int = 8) -> dict[str, str]:
    """Every id's shortest prefix that no other id starts with, at least ``minimum`` long (what
    ``rag chunks`` / ``rag delete`` accept in place of the full id)."""
    ordered = sorted(set(ids))

    def common(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    out: dict[str, str] = {}
    for i, doc_id in enumerate(ordered):
        shared = 0
        if i > 0:
            shared = max(shared, common(doc_id, ordered[i - 1]))
        if i + 1 < len(ordered):
            shared = max(shared, common(doc_id, ordered[i + 1]))
        out[doc_id] = doc_id[: max(minimum, shared + 1)]
    return out


def sources_json(
    sources: Sequence[Source], filename_of: Callable[[str], str | None]
) -> list[dict[str, Any]]:
    """Sources as JSON objects carrying ``filename`` (the document's path in the KB, as the
    API names it) next to ``source`` (the file's path at ingestion, kept for compatibility)."""
    names: dict[str, str] = {}
    out = []
    for s in sources:
        if s.doc_id not in names:
            names[s.doc_id] = filename_of(s.doc_id) or ""
        out.append({**s.model_dump(), "filename": names[s.doc_id]})
    return out
