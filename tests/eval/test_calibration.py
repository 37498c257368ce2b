"""Gate thresholds from a knowledge base's own questions (rag eval --calibrate)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rag_app.eval.calibration import calibrate, target_label, threshold_for
from rag_app.eval.report import render_calibration
from rag_app.eval.runner import EvalRun


@dataclass
class Rec:
    answerable: bool
    confidence: float | None
    error: str | None = None


def test_the_threshold_refuses_at_most_the_target_share() -> None:
    conf = [0.01 * i for i in range(1, 101)]  # 0.01 .. 1.00
    for target in (0.0, 0.01, 0.03, 0.1, 0.5):
        t = threshold_for(conf, target)
        refused = sum(1 for c in conf if c < t)
        assert refused <= target * len(conf) + 1e-9
        # the highest such threshold: the next answered question would be refused above it
        assert sum(1 for c in conf if c <= t) > target * len(conf)
    assert threshold_for([], 0.03) == 0.0
    assert threshold_for([0.2, 0.4], 1.0) > 0.4  # refusing everything is allowed at 100 %


def test_each_row_says_what_it_refuses() -> None:
    records = [Rec(True, c) for c in (0.02, 0.3, 0.5, 0.7, 0.9)] + [
        Rec(False, c) for c in (0.01, 0.04, 0.2, 0.8)
    ]
    cal = calibrate(records, run_threshold=0.05, presets={"balanced": 0.05, "strict": 0.25})
    assert (cal.answerable, cal.unanswerable) == (5, 4)
    rows = {r.label: r for r in cal.rows}
    assert rows["balanced"].false_refusal == pytest.approx(0.2)  # 0.02 of five
    assert rows["balanced"].unanswerable_refused == pytest.approx(0.5)  # 0.01, 0.04
    assert rows["strict"].false_refusal == pytest.approx(0.2)
    assert rows["strict"].unanswerable_refused == pytest.approx(0.75)
    # 1 % of five answerable questions is none: the threshold is the lowest one, 0.02
    low = rows[target_label(0.01)]
    assert low.threshold == pytest.approx(0.02) and low.false_refusal == 0.0
    assert low.unanswerable_refused == pytest.approx(0.25)
    assert not low.exact  # below the run's 0.05: a question refused unread may score lower
    assert rows["strict"].exact and rows["balanced"].exact
    assert [r.threshold for r in cal.rows] == sorted(r.threshold for r in cal.rows)
    assert cal.suggested(0.03) is not None
    table = render_calibration(EvalRun(k=5, calibration=cal))
    assert "| 0.02 * | ≤1% false refusals | 0.0% | 25.0% |" in table
    assert "| 0.05 | balanced | 20.0% | 50.0% |" in table
    # with the gate off nothing was read: every probability is an upper bound
    assert not any(r.exact for r in calibrate(records, run_threshold=0.0).rows)


def test_records_without_a_confidence_are_left_out() -> None:
    records = [Rec(True, None), Rec(True, 0.4, error="boom"), Rec(True, 0.6), Rec(False, None)]
    cal = calibrate(records, run_threshold=0.05)
    assert (cal.answerable, cal.unanswerable) == (1, 0)
    assert all(r.unanswerable_refused is None for r in cal.rows)
    assert calibrate([Rec(False, 0.3)], run_threshold=0.05).rows == []  # nothing to fit on
