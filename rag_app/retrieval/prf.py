"""Pseudo-relevance feedback (RM3-style) for the keyword branch.

A person asks "老公欠的债我要还吗"; the article speaks of "夫妻共同债务". The first fused ranking
(dense ∥ keyword) often holds the right article or its neighbours near the top even when the
keyword branch alone does not: their vocabulary is the bridge. The top ``docs`` fused chunks are
taken as relevant, each term of theirs is weighted as in RM3 (``sum_D P(w|D) P(D|Q)``, with
``P(D|Q)`` from the fused scores) times its IDF in the keyword index, and the best ``terms`` that
are not already in the question are added to the question's tokens for a second keyword query.
Its ranking joins the fusion as a third branch with weight ``weight``.

Tenant safety: the feedback chunks are read from the ledger under the retriever's scope (tenant
and documents) and come from rankings made under the same scope, so an expansion term always
occurs in a chunk the caller may see; the keyword index's global document frequencies weigh the
candidates, they never supply one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_app.retrieval.scope import Scope
from rag_app.text.tokenizer import tokenize
from rag_app.types import ChunkInfo

# article labels (第33条) and bare numbers name one place; they don't bridge wording
_NOT_A_BRIDGE = re.compile(r"第?[零〇一二两三四五六七八九十百千万\d]+[编章节条款项]?|[\d.]+")


def feedback_params(settings: Any) -> dict[str, Any]:
    """HybridRetriever keyword arguments from Settings (``prf_docs`` 0: feedback off)."""
    return {
        "prf_docs": settings.prf_docs if settings.keyword_prf else 0,
        "prf_terms": settings.prf_terms,
        "prf_weight": settings.prf_weight,
    }


def expansion_terms(
    question_tokens: Sequence[str],
    feedback: Sequence[tuple[str, float]],
    idf: Callable[[list[str]], Mapping[str, float]],
    *,
    terms: int = 8,
    min_docs: int = 2,
) -> list[tuple[str, float]]:
    """The best expansion terms, weight first, from ``feedback`` = [(chunk text, its score)].

    A candidate is a keyword-index token of two or more characters, not in the question, not an
    article label or a number, found in at least ``min(min_docs, len(feedback))`` chunks.
    """
    if not feedback or terms <= 0:
        return []
    asked = set(question_tokens)
    total = sum(max(score, 0.0) for _, score in feedback) or float(len(feedback))
    model: dict[str, float] = {}
    seen_in: Counter[str] = Counter()
    for text, score in feedback:
        counts = Counter(
            t
            for t in tokenize(text)
            if len(t) >= 2 and t not in asked and not _NOT_A_BRIDGE.fullmatch(t)
        )
        length = sum(counts.values())
        if not length:
            continue
        relevance = (max(score, 0.0) or 1.0) / total
        for term, count in counts.items():
            model[term] = model.get(term, 0.0) + relevance * count / length
            seen_in[term] += 1
    need = min(min_docs, len(feedback))
    candidates = [t for t in model if seen_in[t] >= need]
    if not candidates:
        return []
    weights = idf(candidates)
    scored = [(t, model[t] * weights.get(t, 0.0)) for t in candidates]
    scored = [(t, w) for t, w in scored if w > 0]
    scored.sort(key=lambda tw: (-tw[1], tw[0]))
    return scored[:terms]


def feedback_chunks(
    ledger: Any,
    scope: Scope,
    fused: Sequence[tuple[str, float]],
    known: Mapping[str, ChunkInfo],
    docs: int,
) -> list[tuple[str, float]]:
    """(text, fused score) of the top ``docs`` fused chunks that are active and in ``scope``."""
    top = list(fused[:docs])
    chunks = {c: known[c] for c, _ in top if c in known}
    missing = [c for c, _ in top if c not in chunks]
    if missing:
        chunks.update(ledger.active_chunks_by_id(missing, tenant=scope.tenant))
    allowed = set(scope.doc_ids) if scope.doc_ids is not None else None
    out = []
    for chunk_id, score in top:
        chunk = chunks.get(chunk_id)
        if chunk is None or (allowed is not None and chunk.doc_id not in allowed):
            continue
        out.append((chunk.text, score))
    return out
