"""The value-swap probes' dates and the stacked refit of one gate weight
(training/probes.py and estimators.py)."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np
import pytest

from rag_app.answer.model import LinearModel


@pytest.fixture(scope="module")
def bench() -> tuple[ModuleType, ModuleType]:
    from training import estimators, probes

    return probes, estimators


def test_a_month_is_swapped_for_another_month_or_year_of_its_form(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    probes, _ = bench
    out = probes.swap_candidates("2021年10月")
    assert "2021年10月" not in out
    assert "2021年3月" in out and "2022年10月" in out
    assert all(re.fullmatch(r"\d{4}年\d{1,2}月", c) for c in out)


def test_a_year_is_swapped_for_a_nearby_year(bench: tuple[ModuleType, ModuleType]) -> None:
    probes, _ = bench
    assert probes.swap_candidates("2019年") == [
        "2016年", "2017年", "2018年", "2020年", "2021年", "2022年"
    ]  # fmt: skip


def test_values_that_are_not_dates_are_not_swapped(bench: tuple[ModuleType, ModuleType]) -> None:
    probes, _ = bench  # 5001元 is still answered by a rule for 5000元以上
    assert probes.swap_candidates("5000元") == []
    assert probes.swap_candidates("63岁") == []


def _gate() -> LinearModel:
    return LinearModel(
        features=["support", "rival"], mean=[0.0, 0.0], scale=[1.0, 1.0], coef=[2.0, 0.0],
        intercept=0.0,
    )  # fmt: skip


def test_refitting_one_weight_moves_that_weight_alone(bench: tuple[ModuleType, ModuleType]) -> None:
    _, estimators = bench
    rng = np.random.default_rng(0)
    support = rng.normal(size=400)
    rival = (rng.random(400) < 0.3).astype(float)
    # answerable when supported, and never about another period
    y = ((support > 0) & (rival == 0)).astype(float)
    q = np.column_stack([support, rival])
    refit = estimators.refit_one(
        _gate(), q, y, np.ones(400), ["support", "rival"], "rival", -1, c=1.0
    )
    assert refit.coef[0] == 2.0
    assert refit.coef[1] < -1.0
    assert refit.mean == [0.0, 0.0] and refit.scale == [1.0, 1.0]


def test_the_refitted_weight_keeps_its_sign(bench: tuple[ModuleType, ModuleType]) -> None:
    _, estimators = bench
    rng = np.random.default_rng(1)
    support = rng.normal(size=300)
    rival = (rng.random(300) < 0.5).astype(float)
    y = ((support > 0) | (rival == 1)).astype(float)  # data that would make it positive
    q = np.column_stack([support, rival])
    refit = estimators.refit_one(
        _gate(), q, y, np.ones(300), ["support", "rival"], "rival", -1, c=1.0
    )
    assert refit.coef[1] <= 0.0
