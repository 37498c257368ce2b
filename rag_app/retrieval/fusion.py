"""Rank fusion as small pure functions (tested against a reference implementation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Weighted RRF: ``score(d) = sum_b w_b / (k + rank_b(d))`` with 1-based ranks.

    ``rankings`` maps a branch name ("dense", "keyword") to ids, best first. Ties are broken by
    the best single-branch rank, then by id, so the output is deterministic.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for branch, ids in rankings.items():
        w = 1.0 if weights is None else float(weights.get(branch, 0.0))
        seen: set[str] = set()
        for rank, doc in enumerate(ids, start=1):
            if doc in seen:  # a branch counts each id once, at its best rank
                continue
            seen.add(doc)
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
            best[doc] = min(best.get(doc, rank), rank)
    return sorted(scores.items(), key=lambda item: (-item[1], best[item[0]], item[0]))


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale scores to [0, 1]; all-equal scores become 1."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo <= 1e-12:
        return {key: 1.0 for key in scores}
    return {key: (value - lo) / (hi - lo) for key, value in scores.items()}


def weighted_score_fusion(
    scored: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]
) -> list[tuple[str, float]]:
    """Min-max normalise each branch's scores, then add them with ``weights``."""
    total: dict[str, float] = {}
    for branch, scores in scored.items():
        w = float(weights.get(branch, 0.0))
        for doc, value in min_max(scores).items():
            total[doc] = total.get(doc, 0.0) + w * value
    return sorted(total.items(), key=lambda item: (-item[1], item[0]))
