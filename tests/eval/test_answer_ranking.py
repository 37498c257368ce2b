"""The gate's ranking figures apart from its threshold (training/ranking.py)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest


@pytest.fixture(scope="module")
def ranked() -> ModuleType:
    from training import ranking

    return ranking


def test_auc_counts_pairs_and_ties_half(ranked: ModuleType) -> None:
    assert ranked.auc(np.array([0.9, 0.8]), np.array([0.1, 0.2])) == 1.0
    assert ranked.auc(np.array([0.1]), np.array([0.9])) == 0.0
    assert ranked.auc(np.array([0.5, 0.5]), np.array([0.5])) == 0.5
    # 0.6 beats 0.2 and ties 0.6; 0.1 beats neither: (1 + 0.5 + 0) / 4
    assert ranked.auc(np.array([0.6, 0.1]), np.array([0.2, 0.6])) == pytest.approx(0.375)


def test_refused_at_own_threshold_ignores_where_the_preset_falls(ranked: ModuleType) -> None:
    answerable = np.linspace(0.2, 1.0, 100)  # 3 % of them below ~0.224
    near = np.array([0.05, 0.1, 0.21, 0.5])
    scores = np.concatenate([answerable, near])
    kinds = ["answerable"] * 100 + ["near"] * 4
    out = ranked.ranking(scores, kinds)
    assert set(out) == {"near"}
    assert out["near"]["refused_at_own_3pct"] == 0.75
    # the same scores shifted together: the preset's cells would move, the ranking does not
    assert ranked.ranking(scores * 0.5, kinds) == out


def test_no_answerable_questions_no_figures(ranked: ModuleType) -> None:
    assert ranked.ranking(np.array([0.1, 0.2]), ["near", "offtopic"]) == {}
