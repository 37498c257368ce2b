"""How well the gate ranks, apart from where its threshold falls.

A change to the question analysis or the gate moves a leave-one-domain-out cell in two ways: it
may rank a domain's answerable questions above its questions to refuse better or worse, and it
may move the preset's threshold, which is the lowest of the *fitted* domains' own thresholds
(:func:`.answer_fit.thresholds`), so that lifting one domain's hardest answerable questions moves
every other domain's operating point. The false-refusal and refusal cells mix the two. These
figures read the ranking alone, per kind of question to refuse:

* ``auc``: the probability that an answerable question scores above a question of the kind
  (ties count half);
* ``refused_at_own_3pct``: the share of the kind refused at the threshold that refuses 3 % of
  the domain's *own* answerable questions, an operating point no preset can choose (it reads
  the labels of the domain measured), so two models are compared at the same false refusals.

The difference and amount nouns (docs/research/answering-log.md) were such a case: retqa's false refusals
2.0 -> 3.8 % and cmrc's near misses refused 76.5 -> 78.0 % at the preset, every AUC within 0.005.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from training.reader import auc as mann_whitney_auc

OWN_RATE = 0.03
REFUSE_KINDS = ("unanswerable", "near", "probe", "excised", "offtopic", "valueswap")


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a score of ``pos`` > one of ``neg``), ties counted half (the Mann-Whitney statistic,
    :func:`training.reader.auc`); NaN when either side is empty."""
    value = mann_whitney_auc(pos, neg)
    return float("nan") if value is None else value


def ranking(scores: np.ndarray, kinds: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per kind of question to refuse present in ``kinds``: ``auc`` and ``refused_at_own_3pct``
    of the gate's ``scores`` against the answerable questions'."""
    kind = np.asarray(kinds)
    pos = scores[kind == "answerable"]
    if not len(pos):
        return {}
    # refused when the score is below the threshold: the one below which OWN_RATE of them lie
    own = float(np.quantile(pos, OWN_RATE))
    out = {}
    for k in REFUSE_KINDS:
        neg = scores[kind == k]
        if len(neg):
            out[k] = {
                "auc": round(auc(pos, neg), 4),
                "refused_at_own_3pct": round(float((neg < own).mean()), 4),
            }
    return out


def ranking_lines(table: dict[str, dict[str, Any]]) -> list[str]:
    """One line per data set of the fit's table (:func:`.answer_run.run`): leave-one-domain-out, per kind, the
    AUC and the share refused at the domain's own 3 % false refusals."""
    lines = []
    for d, row in table.items():
        cells = row.get("leave_one_domain_out", {}).get("ranking", {})
        parts = [
            f"{k} AUC {v['auc']:.3f}, {100 * v['refused_at_own_3pct']:.1f} % at own 3 %"
            for k, v in cells.items()
        ]
        lines.append(f"{d}: " + "; ".join(parts))
    return lines
