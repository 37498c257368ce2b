"""Log-odds, shared by the answer model and the gate's features (each with its own clamp)."""

from __future__ import annotations

import math


def logit(p: float, eps: float) -> float:
    """log(p / (1 - p)) with ``p`` clamped to [eps, 1 - eps]: the fitted models were fitted
    with their own clamp (the gate's support feature 1e-4, the reading stage 1e-9)."""
    p = min(max(p, eps), 1 - eps)
    return math.log(p / (1 - p))
