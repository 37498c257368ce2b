"""FTS5's ``bm25()`` over cached posting lists, and the best rows of a ranking.

:func:`bm25_scores` scores every row of the index (one ``bincount`` over all the question's
postings); :func:`bm25_top` gives the same best rows without scoring the rows that hold only
the question's commonest terms, whose bounds prove they can't reach the best ``limit``
(MaxScore): at a million chunks those terms hold millions of postings, and scoring them all was
most of the keyword branch (ranking p95 64 → 20 ms there). Both give FTS5's values bit
for bit: per row, each term's ``idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * D / avgdl))``
in double precision, added in the question's order of terms, as FTS5 adds them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from rag_app.store.postings import Postings, PostingState

K1 = 1.2
B = 0.75
# the rarest terms' rows are scored first while they hold at most this many postings (at least
# one term's), for a floor; the cut is tried only when the other terms hold this many times as
# many postings. Chosen on the 174 dev questions at a million chunks (the query_scale ones;
# ranking alone, warm: 50k / 8 gave p95 38 ms, 20k / 4 23 ms, 10k / 4 20 ms, 5k / 4 18 ms,
# scoring every row 64 ms)
CANDIDATE_POSTINGS = 10_000
WORTH_PRUNING = 4


def idf(hits: int, rows: int) -> float:
    """FTS5's IDF: ``log((N - n + 0.5) / (n + 0.5))``, 1e-6 when not positive."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def contributions(
    rows: NDArray[np.int32], counts: NDArray[np.uint16], term_idf: float, state: PostingState
) -> NDArray[np.float64]:
    """One term's part of the score of each of ``rows`` (its counts there: ``counts``)."""
    tf = counts.astype(np.float64)
    # FTS5's expression, in its order: idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * D / avgdl))
    return term_idf * ((tf * (K1 + 1)) / (tf + norms(state)[rows]))


def norms(state: PostingState) -> NDArray[np.float64]:
    """``k1 * (1 - b + b * D / avgdl)`` of every row (by row id), made once per state."""
    if state.norms is None:
        state.norms = K1 * (1 - B + B * state.lengths.astype(np.float64) / state.avg_length)
    return state.norms


def bm25_scores(
    terms: Sequence[str], lists: list[Postings], state: PostingState
) -> NDArray[np.float64]:
    """FTS5's ``bm25()`` (negated: positive) of every row for the OR of the terms' lists."""
    return _summed([(rows, counts, len(rows)) for rows, counts in lists], state)


def _summed(
    parts: list[tuple[NDArray[np.int32], NDArray[np.uint16], int]], state: PostingState
) -> NDArray[np.float64]:
    """Every row's score (0: not scored) from ``parts``: per term, in the question's order,
    the rows to score, the term's counts there and how many rows hold the term (its IDF)."""
    docs, weights = [], []
    for rows, counts, hits in parts:
        if len(rows):
            docs.append(rows)
            weights.append(contributions(rows, counts, idf(hits, state.rows), state))
    if not docs:
        return np.zeros(len(state.lengths), dtype=np.float64)
    summed = np.bincount(
        np.concatenate(docs), weights=np.concatenate(weights), minlength=len(state.lengths)
    )
    return summed.astype(np.float64, copy=False)


def top(
    scores: NDArray[np.float64], limit: int, allowed: NDArray[np.int32] | None = None
) -> list[tuple[int, float]]:
    """The ``limit`` best rows by ``scores`` (ties by row id): (row id, -score)."""
    if allowed is not None:  # scoped: only these rows (IDF and lengths stay index-wide, as FTS5)
        scoped = np.zeros_like(scores)
        scoped[allowed] = scores[allowed]
        scores = scoped
    return _best(np.flatnonzero(scores), scores, limit, by_row=True)


def _best(
    rows: NDArray[np.int64], scores: NDArray[np.float64], limit: int, *, by_row: bool
) -> list[tuple[int, float]]:
    """The ``limit`` best of ``rows`` (sorted), their scores ``scores[rows]`` when ``by_row``,
    else ``scores`` (aligned with ``rows``); scores of 0 don't match."""
    values = scores[rows] if by_row else scores
    if not by_row:
        rows, values = rows[values > 0], values[values > 0]
    if len(rows) > limit:
        # the limit-th best score, then every row scoring at least that (ties stay complete)
        cut = -np.partition(-values, limit - 1)[limit - 1]
        keep = values >= cut
        rows, values = rows[keep], values[keep]
    order = np.lexsort((rows, -values))[:limit]
    return [(int(rows[i]), -float(values[i])) for i in order]


def bm25_top(
    terms: Sequence[str],
    lists: list[Postings],
    state: PostingState,
    limit: int,
    allowed: NDArray[np.int32] | None = None,
) -> list[tuple[int, float]]:
    """``top(bm25_scores(terms, lists, state), limit, allowed)``, cheaper when it can be
    (MaxScore; ``lists`` sorted by row).

    The rows of the rarest terms (up to ``CANDIDATE_POSTINGS`` postings) are scored exactly
    (every term's part, looked up in its sorted list): their ``limit``-th best score is a floor
    for the index's. A term adds at most its IDF times ``k1 + 1``, so a row holding only the
    commonest terms whose bounds sum below that floor can't rank: those terms are *skipped*,
    counted only in rows an other term holds. When every term but the rarest is skipped, the
    rare terms' best are the index's best; otherwise the rows of the other terms are scored,
    the skipped terms' lists cut to those rows. The scores are FTS5's bit for bit: each row
    adds the same parts in the question's order of terms."""

    def every_row() -> list[tuple[int, float]]:
        return top(bm25_scores(terms, lists, state), limit, allowed)

    present = [i for i in range(len(lists)) if len(lists[i][0])]
    if not present:
        return []
    order = sorted(present, key=lambda i: len(lists[i][0]))
    small: list[int] = []
    held = 0
    for i in order:
        if small and held + len(lists[i][0]) > CANDIDATE_POSTINGS:
            break
        small.append(i)
        held += len(lists[i][0])
    if sum(len(lists[i][0]) for i in present) < (1 + WORTH_PRUNING) * held:
        return every_row()  # scoring all is as cheap
    candidates = np.unique(np.concatenate([lists[i][0] for i in small]).astype(np.int64))
    if allowed is not None:
        candidates = np.intersect1d(candidates, allowed.astype(np.int64))
    if len(candidates) < limit:  # too few for a floor
        return every_row()
    scores = np.zeros(len(candidates), dtype=np.float64)
    for rows, counts in lists:  # the question's order: FTS5's order of additions
        if not len(rows):
            continue
        at = np.minimum(np.searchsorted(rows, candidates), len(rows) - 1)
        hit = rows[at] == candidates
        if hit.any():
            scores[hit] += contributions(
                rows[at[hit]], counts[at[hit]], idf(len(rows), state.rows), state
            )
    best = _best(candidates, scores, limit, by_row=False)
    if len(best) < limit:
        return every_row()
    floor = -best[-1][1] / (1 + 1e-9)  # room for rounding: a skipped row stays strictly below
    skipped: set[int] = set()
    bound = 0.0
    for i in reversed(order[len(small) :]):  # the commonest first: the lowest bounds
        term_bound = idf(len(lists[i][0]), state.rows) * (K1 + 1)
        if bound + term_bound >= floor:
            break
        skipped.add(i)
        bound += term_bound
    if len(skipped) == len(present) - len(small):  # nothing but the rare terms can rank
        return best
    if not skipped:
        return every_row()
    held_rows = np.zeros(len(state.lengths), dtype=bool)
    for i in present:
        if i not in skipped:
            held_rows[lists[i][0]] = True
    parts = []
    for i, (rows, counts) in enumerate(lists):
        keep = held_rows[rows] if i in skipped else slice(None)
        parts.append((rows[keep], counts[keep], len(rows)))
    return top(_summed(parts, state), limit, allowed)
