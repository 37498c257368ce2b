"""store/bm25.py: the bound-pruned best rows equal the best of every row's score, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from rag_app.store import bm25
from rag_app.store.postings import Postings, PostingState


def _state(rng: np.random.Generator, n: int) -> PostingState:
    lengths = np.zeros(n + 1, dtype=np.uint32)
    lengths[1:] = rng.integers(5, 300, n)
    return PostingState(b"v", lengths, n, float(lengths.sum()) / n)


def _lists(rng: np.random.Generator, n: int, sizes: list[int]) -> list[Postings]:
    out = []
    for size in sizes:
        rows = np.sort(rng.choice(np.arange(1, n + 1), size, replace=False)).astype(np.int32)
        counts = rng.integers(1, 4, size).astype(np.uint16)  # few distinct: many equal scores
        out.append((rows, counts))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_pruned_best_rows_are_every_rows_best(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25, "CANDIDATE_POSTINGS", 400)
    monkeypatch.setattr(bm25, "WORTH_PRUNING", 1)
    rng = np.random.default_rng(seed)
    n = 20_000
    state = _state(rng, n)
    # a rare term or two, common ones (one in more than half the rows: IDF 1e-6), a repeat
    sizes = [int(s) for s in rng.choice([20, 60, 150, 2_000, 6_000, 12_000], 5)]
    lists = _lists(rng, n, sizes)
    lists.append(lists[0])  # a term twice: counted twice, as FTS5 does
    terms = [f"t{i}" for i in range(len(lists))]
    allowed = np.sort(rng.choice(np.arange(1, n + 1), 5_000, replace=False)).astype(np.int32)
    for limit in (1, 5, 64, 256):
        for scope in (None, allowed):
            want = bm25.top(bm25.bm25_scores(terms, lists, state), limit, scope)
            assert bm25.bm25_top(terms, lists, state, limit, scope) == want


def test_the_bound_skips_the_common_terms_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rare term's rows outscore anything the common terms can add: the rows of the common
    terms are never all scored (and the answer is still every row's best)."""
    rng = np.random.default_rng(3)
    n = 200_000
    state = _state(rng, n)
    lists = _lists(rng, n, [40, 90_000, 120_000])
    terms = ["rare", "common", "commoner"]
    want = bm25.top(bm25.bm25_scores(terms, lists, state), 10)
    calls: list[int] = []
    real = bm25.bm25_scores
    monkeypatch.setattr(bm25, "bm25_scores", lambda *a: calls.append(1) or real(*a))
    assert bm25.bm25_top(terms, lists, state, 10) == want
    assert not calls
    # asked for more rows than the rare term holds, every row is scored
    assert bm25.bm25_top(terms, lists, state, 64) == bm25.top(real(terms, lists, state), 64)
    assert calls


def test_common_terms_are_counted_only_where_other_terms_hold_a_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Terms in most rows are skipped (their bound is below the rare term's best), terms of a
    few thousand rows are not all: only rows holding a term not skipped are scored, with the
    same scores."""
    monkeypatch.setattr(bm25, "CANDIDATE_POSTINGS", 100)  # the floor from the rare term alone
    rng = np.random.default_rng(5)
    n = 200_000
    state = _state(rng, n)
    lists = _lists(rng, n, [3_000, 40, 4_000, 90_000, 120_000])
    terms = ["mid", "rare", "mid2", "common", "commoner"]
    real_scores, real_top = bm25.bm25_scores, bm25.top
    want = real_top(real_scores(terms, lists, state), 10)
    scored_all: list[int] = []
    monkeypatch.setattr(bm25, "bm25_scores", lambda *a: scored_all.append(1) or real_scores(*a))
    ranked: list[int] = []
    monkeypatch.setattr(bm25, "top", lambda *a: ranked.append(1) or real_top(*a))
    assert bm25.bm25_top(terms, lists, state, 10) == want
    assert ranked and not scored_all  # rows of "rare" or "mid" were scored, not every row
