"""Gate thresholds from a knowledge base's own questions.

The bundled presets were fitted on other documents (``docs/answering.md``); a knowledge base asked
in other words (lay questions about a clause) can refuse more of its answerable questions than
the preset's rate. An evaluation run records each question's probability that the evidence
answers it (``QuestionRecord.confidence``, the answer model's); a question is refused when that
probability is below the gate's threshold. From the run's answerable questions this gives the
threshold for a target false-refusal rate, and from its unanswerable ones what that threshold
would refuse, at no cost of asking again.

A probability is the one the threshold of the run was compared with: for a threshold at or above
the run's it is exact; below it, a question the run refused without reading its evidence
(the reading stage only lowers a probability, so it is skipped when it cannot change a refusal)
would have been read, and may score lower. Rows below the run's threshold are marked inexact;
run with a low ``RAG_GATE_THRESHOLD`` (such as 0.0001) to calibrate over the whole range. With
the gate off (threshold 0) no question is read, so no row is exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, Field

TARGETS = (0.01, 0.03, 0.06, 0.10)


class _Record(Protocol):
    answerable: bool
    confidence: float | None
    error: str | None


class ThresholdRow(BaseModel):
    label: str = Field(description="A preset's name, or the target false-refusal rate.")
    threshold: float
    false_refusal: float | None = Field(
        None, description="Answerable questions refused at this threshold (None: none asked)."
    )
    unanswerable_refused: float | None = Field(
        None, description="Unanswerable questions refused at this threshold (None: none asked)."
    )
    exact: bool = Field(
        description="At or above the run's threshold, the gate on (see the module's notes)."
    )


class Calibration(BaseModel):
    run_threshold: float = Field(description="The gate threshold the run was made with.")
    answerable: int
    unanswerable: int
    rows: list[ThresholdRow]

    def suggested(self, target: float = 0.03) -> ThresholdRow | None:
        """The row of ``target`` false refusals, when the run has answerable questions."""
        label = target_label(target)
        return next((r for r in self.rows if r.label == label), None)


def target_label(target: float) -> str:
    return f"≤{target * 100:g}% false refusals"


def threshold_for(confidences: Sequence[float], target: float) -> float:
    """The highest threshold that refuses at most ``target`` of ``confidences`` (refused: below
    the threshold): the (k+1)-th lowest, k = floor(target * n); 0 without confidences."""
    if not confidences:
        return 0.0
    ordered = sorted(confidences)
    k = math.floor(target * len(ordered) + 1e-9)
    return ordered[k] if k < len(ordered) else math.nextafter(ordered[-1], math.inf)


def _share_below(values: Sequence[float], threshold: float) -> float | None:
    return sum(1 for v in values if v < threshold) / len(values) if values else None


def calibrate(
    records: Sequence[_Record],
    run_threshold: float,
    presets: Mapping[str, float] | None = None,
    targets: Sequence[float] = TARGETS,
) -> Calibration:
    """Thresholds for ``targets`` (false-refusal rates among the answerable questions of
    ``records``) and the model's ``presets``, each with what it refuses. Records without a
    confidence (retrieval only, or an error) are left out."""
    scored = [(r.answerable, r.confidence) for r in records if not r.error]
    ans = [c for answerable, c in scored if answerable and c is not None]
    una = [c for answerable, c in scored if not answerable and c is not None]
    candidates = [(name, t) for name, t in (presets or {}).items()]
    if ans:
        candidates += [(target_label(t), threshold_for(ans, t)) for t in targets]
    rows = [
        ThresholdRow(
            label=label,
            threshold=round(t, 6),
            false_refusal=_share_below(ans, t),
            unanswerable_refused=_share_below(una, t),
            exact=run_threshold > 0 and t >= run_threshold,
        )
        for label, t in sorted(candidates, key=lambda c: c[1])
    ]
    return Calibration(
        run_threshold=run_threshold, answerable=len(ans), unanswerable=len(una), rows=rows
    )
