"""The gate's hard negatives (training/estimators.py): which questions weigh more in
its second fit, and that weighing them moves the fit toward them."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest


@pytest.fixture(scope="module")
def est() -> ModuleType:
    from training import estimators

    return estimators


def test_negatives_above_their_groups_answerable_tail_weigh_more(est: ModuleType) -> None:
    # group a: answerable scores 0.2..0.9, its 10th percentile 0.23; group b: 0.6..0.9
    p = np.array([0.2, 0.3, 0.5, 0.9, 0.1, 0.4, 0.6, 0.7, 0.9, 0.65, 0.5])
    y = np.array([1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0])
    groups = ["a"] * 6 + ["b"] * 5
    w = est.hard_negative_weights(p, y, groups, quantile=0.1, extra=2.0)
    # a's negative at 0.4 is above a's tail, the one at 0.1 is not; b's cut is 0.62, so its
    # negative at 0.65 is hard and the one at 0.5 (which would be hard in a) is not
    assert w.tolist() == [1, 1, 1, 1, 1, 3, 1, 1, 1, 3, 1]


def test_a_group_without_answerable_questions_weighs_as_before(est: ModuleType) -> None:
    w = est.hard_negative_weights(
        np.array([0.9, 0.8]), np.array([0, 0]), ["a", "a"], quantile=0.1, extra=2.0
    )
    assert w.tolist() == [1.0, 1.0]


def test_weighing_the_hard_negatives_lowers_their_scores(est: ModuleType) -> None:
    """A negative that looks like an answerable question on one feature and not on another:
    weighed more, the refit leans on the feature that tells it apart."""
    rng = np.random.default_rng(0)
    n = 400
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    y = (a + 0.3 * rng.normal(size=n) > 0).astype(int)
    hard = (y == 0) & (b > 1.0)
    a[hard] += 1.5  # hard negatives score like answerable ones on a, but have a high b
    q = np.column_stack([a, b])
    signs = {"a": 1, "b": 0}
    first = est.signed_logistic(q, y, np.ones(n), signs, ["a", "b"])
    w = est.hard_negative_weights(first.probabilities(q, ["a", "b"]), y, ["g"] * n, 0.1, 4.0)
    second = est.signed_logistic(q, y, w, signs, ["a", "b"])
    before = first.probabilities(q, ["a", "b"])[hard].mean()
    after = second.probabilities(q, ["a", "b"])[hard].mean()
    assert w[hard].mean() > 1.0
    assert after < before
