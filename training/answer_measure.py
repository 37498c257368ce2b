"""What a fitted answer model does on a set of examples (:func:`measure`): false refusals, the
share of each kind of question to refuse that it refuses, its ranking apart from the threshold
(:mod:`.ranking`), and whether the best unit holds the answer.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.answer.features import FEATURES
from rag_app.answer.model import spread_header_rows
from rag_app.eval.dataset import QAItem, load_qa
from training.answer_features import Example, squash
from training.answer_fit import (
    UNIT_DATASETS,
    FitContext,
    Fitted,
    answer_recall,
    gate_scores,
)
from training.ranking import ranking


def best_unit(fitted: Fitted, e: Example) -> int:
    return int(np.argmax(spread_header_rows(fitted.unit.probabilities(e.x, FEATURES), e.x)))


def answered_elsewhere(shared: Path, e: Example) -> bool:
    """A near miss whose evidence (from documents other than its gold ones) holds its reference
    answer: answerable after all, since the gold lists are not exhaustive (a company's 是否国有
    in another year's table). Reported apart. It holds the answer when it holds every part of
    two or more characters, or, for a table answer, when one unit holds the answer's cell with
    its column name ("是否国有：是") and every cell of the gold row that the question names (the
    company; the year, when the question states it): answers of one character (是, 否) count
    only that way."""
    parts = [p for p in (squash(a) for a in e.answers) if len(p) >= 2]
    evidence = squash("\n".join(e.texts))
    if parts and all(p in evidence for p in parts):
        return True
    item = gold_items(shared, e.dataset).get(e.qid)
    if item is None or not item.gold_rows or not item.answers:
        return False
    units = [squash(t) for t in e.texts]
    question = squash(e.question)
    found = [
        any(cell_elsewhere(row, a, units, question) for row in item.gold_rows) for a in item.answers
    ]
    return all(found) if item.answer_match == "all" else any(found)


def cell_elsewhere(row: dict[str, Any], answer: str, units: list[str], question: str) -> bool:
    """One of ``units`` (squashed) holds the gold ``row``'s cell whose value is ``answer``, with
    its column name, and every other cell of the row that ``question`` names."""
    answer = squash(answer)
    cells = {str(k): squash(str(v)) for k, v in row.items()}
    keys = [v for v in cells.values() if len(v) >= 2 and v != answer and v in question]
    if not answer or not keys:
        return False
    labelled = [f"{k}：{v}" for k, v in cells.items() if v == answer]
    return any(any(cell in u for cell in labelled) and all(k in u for k in keys) for u in units)


@cache
def gold_items(shared: Path, dataset: str) -> dict[str, QAItem]:
    """The dev set's questions by id (for their gold rows), or none without the shared data."""
    path = shared / dataset / "qa.jsonl"
    return {item.id: item for item in load_qa(path)} if path.exists() else {}


def measure(
    ctx: FitContext,
    fitted: Fitted,
    thr: float,
    rows: list[Example],
    scores: np.ndarray | None = None,
    *,
    refusals_only: bool = False,
) -> dict[str, Any]:
    """The cells of ``rows`` at threshold ``thr``. ``scores``: the gate's scores of ``rows``
    when already computed (:func:`gate_scores`, the costly part); ``refusals_only``: the refusal
    cells alone (no ranking, no answer selection), as the presets table needs."""
    scores = gate_scores(ctx, fitted, rows) if scores is None else scores
    refused = scores < thr
    out: dict[str, Any] = {}
    for kind, key in (("answerable", "false_refusal"), ("unanswerable", "unanswerable_refused"),
                      ("near", "near_miss_refused"), ("probe", "head_swap_refused"),
                      ("excised", "excised_refused"), ("offtopic", "offtopic_refused"),
                      ("valueswap", "value_swap_refused"),
                      ("entityswap", "entity_swap_refused")):  # fmt: skip
        mask = np.array([e.kind == kind for e in rows])
        if mask.any():
            out[key] = round(float(refused[mask].mean()), 4)
            out[f"n_{kind}"] = int(mask.sum())
    near = np.array([e.kind == "near" for e in rows])
    if near.any():
        elsewhere = np.array(
            [e.kind == "near" and answered_elsewhere(ctx.data.shared, e) for e in rows]
        )
        out["near_miss_answered_elsewhere"] = int(elsewhere.sum())
        if (near & ~elsewhere).any():
            out["near_miss_refused_unanswered"] = round(float(refused[near & ~elsewhere].mean()), 4)
    if refusals_only:
        return out
    # the ranking apart from the threshold (.ranking)
    out["ranking"] = ranking(scores, [e.kind for e in rows])
    ans = [e for e in rows if e.kind == "answerable" and len(e.y)]
    spans = [e for e in ans if e.dataset == "cmrc_trial_zh"]
    if spans:
        hits = [any(squash(a) in squash(e.texts[best_unit(fitted, e)]) for a in e.answers if squash(a))
                for e in spans]  # fmt: skip
        out["first_line_span"] = round(float(np.mean(hits)), 4)
    if ans:
        out["best_unit_is_answer"] = round(
            float(np.mean([bool(e.y[best_unit(fitted, e)]) for e in ans])), 4
        )
    worded = [e for e in ans if e.dataset not in UNIT_DATASETS and e.answers]
    if worded:  # passage-level gold: how much of the reference answer the best unit says
        out["answer_words_in_best_unit"] = round(
            float(np.mean([answer_recall(e)[best_unit(fitted, e)] for e in worded])), 4
        )
    return out
